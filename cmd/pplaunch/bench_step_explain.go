package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/pplaunch/pplaunch/bench"
	"github.com/pplaunch/pplaunch/models"
	"github.com/pplaunch/pplaunch/models/tensor"
)

// explain is `bench step --device cuda --explain`: the step's roofline at
// the H200's peaks, the step measured where a GPU opens, and the prediction
// at the other precisions.
func (c *benchStepCmd) explain(cfg models.Config, prec models.Precision, stdout io.Writer) error {
	if c.Device != "cuda" {
		return exitError{code: 2, err: fmt.Errorf("bench step --explain: --device %s: the roofline is of a CUDA step on an H200; "+
			"give --device cuda (where no GPU is present it prints the prediction and says that nothing ran)", c.Device)}
	}
	precision := string(prec)
	hd := cfg.Width / max(cfg.Heads, 1)
	fused := hd >= tensor.FlashMinHead && hd <= tensor.FlashMaxHead // the CUDA backend's FusedAttention
	r, err := bench.Explain(cfg, c.Batch, precision, fused, bench.H200)
	if err != nil {
		return exitError{code: 2, err: fmt.Errorf("bench step: %w", err)}
	}
	rep, err := bench.Step(bench.StepOptions{Model: cfg, Batch: c.Batch, Threads: c.Threads,
		Steps: c.Steps, Warmup: c.Warmup, BLAS: c.BLAS, Seed: 1, Device: c.Device, Precision: prec})
	var de *bench.DeviceError
	switch {
	case errors.As(err, &de):
		r = r.WithMeasured(0, de.Error())
	case err != nil:
		return err
	default:
		r = r.WithMeasured(rep.StepMS/1e3, fmt.Sprintf("%s, median of %d steps", rep.Backend, rep.Steps))
	}
	var also []bench.Roofline
	for _, p := range bench.Precisions {
		if p != precision {
			o, _ := bench.Explain(cfg, c.Batch, p, fused, bench.H200) // the shape was accepted above
			also = append(also, o)
		}
	}
	if c.JSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(struct {
			Roofline bench.Roofline   `json:"roofline"`
			Also     []bench.Roofline `json:"other_precisions"`
		}{r, also})
	}
	return r.WriteText(stdout, also)
}
