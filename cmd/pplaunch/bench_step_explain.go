package main

import (
	"fmt"
	"io"

	"github.com/pplaunch/pplaunch/bench"
	"github.com/pplaunch/pplaunch/models"
)

// explain is `bench step --device cuda --explain`: the step's roofline at
// the H200's peaks, the step measured where a GPU opens, and the prediction
// at the other precisions.
func (c *benchStepCmd) explain(cfg models.Config, prec models.Precision, stdout io.Writer) error {
	if c.Device != "cuda" {
		return exitError{code: 2, err: fmt.Errorf("bench step --explain: --device %s: the roofline is of a CUDA step on an H200; "+
			"give --device cuda (where no GPU is present it prints the prediction and says that nothing ran)", c.Device)}
	}
	r, also, err := bench.ExplainStep(cfg, c.Batch, string(prec))
	if err != nil {
		return exitError{code: 2, err: fmt.Errorf("bench step: %w", err)}
	}
	if r, err = r.Measure(c.options(cfg, prec)); err != nil {
		return err
	}
	if c.JSON {
		return bench.WriteExplainJSON(stdout, r, also)
	}
	return r.WriteText(stdout, also)
}
