package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"

	"github.com/pplaunch/pplaunch/models/checkpoint"
)

// checkpointCmd is `pplaunch checkpoint`: tools over saved checkpoints.
type checkpointCmd struct {
	Compare *checkpointCompareCmd `arg:"subcommand:compare" help:"compare two checkpoints tensor by tensor, whatever stage layout each was saved with"`
}

// checkpointCompareCmd is `pplaunch checkpoint compare DIR1 DIR2 [--rtol R] [--atol A]`.
type checkpointCompareCmd struct {
	Dir1 string  `arg:"positional,required" placeholder:"DIR1" help:"a checkpoint directory, or a --checkpoint-dir root (its newest complete checkpoint is used)"`
	Dir2 string  `arg:"positional,required" placeholder:"DIR2" help:"the checkpoint to compare with (the reference b in |a-b| <= atol + rtol*|b|)"`
	RTol float64 `arg:"--rtol" default:"0" help:"relative tolerance; with --atol 0 and --rtol 0 values must be equal exactly"`
	ATol float64 `arg:"--atol" default:"0" help:"absolute tolerance"`
}

func (c *checkpointCmd) run(ctx context.Context, stdout, stderr io.Writer) error {
	if c.Compare == nil {
		return errors.New("checkpoint: name a subcommand (compare)")
	}
	return c.Compare.run(ctx, stdout, stderr)
}

// run prints one line per tensor and returns an error unless every tensor matches.
func (c *checkpointCompareCmd) run(_ context.Context, stdout, _ io.Writer) error {
	if !(c.RTol >= 0) || !(c.ATol >= 0) || math.IsInf(c.RTol, 0) || math.IsInf(c.ATol, 0) {
		return exitError{code: 2, err: fmt.Errorf("checkpoint compare: --rtol %v and --atol %v must be finite and >= 0", c.RTol, c.ATol)}
	}
	tol := checkpoint.Tolerance{RTol: c.RTol, ATol: c.ATol}
	dirA, dirB, r, err := checkpoint.CompareDirs(c.Dir1, c.Dir2, tol)
	if err != nil {
		return fmt.Errorf("checkpoint compare: %w", err)
	}
	for _, d := range []struct{ label, dir string }{{"a", dirA}, {"b", dirB}} {
		m, err := checkpoint.ReadManifest(d.dir)
		if err != nil {
			return fmt.Errorf("checkpoint compare: %w", err)
		}
		fmt.Fprintf(stdout, "%s: %s (step %d, %d stages)\n", d.label, d.dir, m.Step, m.NumStages)
	}
	if err := r.Write(stdout, tol); err != nil {
		return err
	}
	bad := r.Mismatches()
	if bad > 0 {
		return fmt.Errorf("checkpoint compare: %d of %d tensors differ between %s and %s", bad, len(r.Diffs), dirA, dirB)
	}
	return nil
}
