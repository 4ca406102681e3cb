package main

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pplaunch/pplaunch/models/checkpoint"
)

// TestTrainZeroProcesses runs pp 2 × dp 2 as real processes, once plainly
// and once with DeepSpeed's zero_optimization.stage 1 in a --config file:
// the same losses, gradient norms and checkpoint bits, half the optimizer
// state on every rank (in --metrics and the summary), and the effective
// configuration says ZeRO stage 1 (its zero option).
func TestTrainZeroProcesses(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "zero.json")
	if err := os.WriteFile(cfg, []byte(`{"zero_optimization": {"stage": 1, "overlap_comm": true}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	args := []string{"--pp", "2", "--dp", "2", "--steps", "2", "--microbatches", "2", "--eval-batches", "1", "--sample-tokens", "0"}
	plain := runJob(t, 4, 0, nil, append(args, "--checkpoint-dir", filepath.Join(dir, "plain"))...)
	mustSucceed(t, plain, "train --pp 2 --dp 2")
	zero := runJob(t, 4, 0, nil, append(args, "--config", cfg, "--checkpoint-dir", filepath.Join(dir, "zero"))...)
	mustSucceed(t, zero, "train --pp 2 --dp 2 --config zero.json")
	if len(plain.metrics) != 2 || len(zero.metrics) != 2 {
		t.Fatalf("%d and %d metric lines, want 2", len(plain.metrics), len(zero.metrics))
	}
	for i, p := range plain.metrics {
		z := zero.metrics[i]
		if math.Float64bits(p.Loss) != math.Float64bits(z.Loss) || math.Float64bits(p.GradNorm) != math.Float64bits(z.GradNorm) {
			t.Errorf("step %d: loss %v norm %v with ZeRO, %v %v without", i, z.Loss, z.GradNorm, p.Loss, p.GradNorm)
		}
		if len(p.OptimizerBytes) != 4 || len(z.OptimizerBytes) != 4 {
			t.Fatalf("step %d: optimizer bytes %v and %v, want 4 ranks each", i, p.OptimizerBytes, z.OptimizerBytes)
		}
		for r, b := range p.OptimizerBytes {
			// Each replica holds part d of the stage's layout: ⌈n/2⌉ or ⌊n/2⌋ of its n values.
			if got, other := z.OptimizerBytes[r], z.OptimizerBytes[(r+2)%4]; got+other != b || got-other > 8 || other-got > 8 {
				t.Errorf("step %d rank %d: %d bytes with ZeRO (replica %d: %d), %d without", i, r, got, (r/2+1)%2, other, b)
			}
		}
	}
	_, _, rep, err := checkpoint.CompareDirs(filepath.Join(dir, "zero"), filepath.Join(dir, "plain"), checkpoint.Tolerance{})
	if err != nil || !rep.OK() {
		t.Errorf("checkpoints with and without ZeRO: %d differ (%v)", rep.Mismatches(), err)
	}
	for _, want := range []string{"pp 2 × dp 2 (ZeRO stage 1: each replica keeps 1/2 of the optimizer state)", `"zero":1`, "rank 3: peak activations", "optimizer state"} {
		if !strings.Contains(zero.out, want) {
			t.Errorf("output lacks %q:\n%s", want, zero.out)
		}
	}
}
