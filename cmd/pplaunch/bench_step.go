package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/pplaunch/pplaunch/bench"
	"github.com/pplaunch/pplaunch/models"
	"github.com/pplaunch/pplaunch/models/tensor"
)

// benchStepCmd is `pplaunch bench step`.
type benchStepCmd struct {
	modelFlags
	Batch     int    `arg:"--batch" default:"16" help:"sequences per step"`
	Threads   int    `arg:"--threads" default:"1" help:"threads (GOMAXPROCS) while timing"`
	Steps     int    `arg:"--steps" default:"5" help:"timed steps; the median is reported"`
	Warmup    int    `arg:"--warmup" default:"1" help:"untimed steps first"`
	BLAS      string `arg:"--blas,env:PPLAUNCH_BLAS" default:"auto" help:"matrix products: auto, openblas, go (the built-in SIMD kernels) or gonum"`
	Device    string `arg:"--device" default:"cpu" help:"where the model computes: cpu or cuda"`
	Precision string `arg:"--precision" default:"fp32" help:"fp32, tf32 (cuda: products on TF32 tensor cores) or bf16 (bfloat16 activations, float32 weights; as train's --precision)"`
	TF32      bool   `arg:"--tf32" help:"the same as --precision tf32"`
	JSON      bool   `arg:"--json" help:"print the report as JSON"`
	Explain   bool   `arg:"--explain" help:"with --device cuda: the step's roofline at the H200's peaks per kernel family beside the measured step and its MFU (where no GPU is present, the prediction alone)"`
}

func (c *benchStepCmd) run(ctx context.Context, stdout, stderr io.Writer) error {
	cfg, err := c.config()
	if err != nil {
		return exitError{code: 2, err: err} // a usage error
	}
	prec, err := models.ResolvePrecision(c.Precision, c.TF32, c.Device)
	if err != nil {
		return exitError{code: 2, err: err}
	}
	if c.Explain {
		return c.explain(cfg, prec, stdout)
	}
	if cpu, err := tensor.NewCPU(c.BLAS); err == nil && cpu.OpenBLASHint() != "" && c.Device == "cpu" {
		fmt.Fprintln(stderr, "pplaunch: bench step:", cpu.OpenBLASHint())
	}
	rep, err := bench.Step(c.options(cfg, prec))
	if de := (*bench.DeviceError)(nil); errors.As(err, &de) {
		return exitError{code: 2, err: fmt.Errorf("bench step --device %s: %w", c.Device, de)}
	}
	if err != nil {
		return err
	}
	if c.JSON {
		return rep.WriteJSON(stdout)
	}
	return rep.WriteText(stdout)
}

// options are the step the flags ask for.
func (c *benchStepCmd) options(cfg models.Config, prec models.Precision) bench.StepOptions {
	return bench.StepOptions{Model: cfg, Batch: c.Batch, Threads: c.Threads,
		Steps: c.Steps, Warmup: c.Warmup, BLAS: c.BLAS, Seed: 1, Device: c.Device, Precision: prec}
}

// exitError is an error that ends the process with its own exit code (2: the
// command cannot start as asked).
type exitError struct {
	code int
	err  error
}

func (e exitError) Error() string { return e.err.Error() }
func (e exitError) Unwrap() error { return e.err }
