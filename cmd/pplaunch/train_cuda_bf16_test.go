package main

import (
	"strings"
	"testing"

	"github.com/pplaunch/pplaunch/cbits/cudaemu"
)

// TestTrainCUDABF16Emulated runs `pplaunch train --device cuda --precision
// bf16` as processes over the CUDA emulator, with a head width of 32 (the
// fused attention in bf16): two ranks as pp 2 over TCP, their bfloat16
// activations staged through pinned host buffers, give the checkpoint bits
// and losses of one process, and --metrics counts half the bytes of the
// same layout in fp32.
func TestTrainCUDABF16Emulated(t *testing.T) {
	env := []string{"PPLAUNCH_CUDA_LIBS=" + cudaemu.Dir(t), "XDG_CACHE_HOME=" + t.TempDir()}
	model := []string{"--device", "cuda", "--layers", "2", "--width", "32", "--heads", "1", "--seq", "8", "--tied",
		"--microbatch-size", "1", "--microbatches", "2", "--steps", "2", "--eval-every", "0", "--eval-batches", "0", "--timeout", "60s"}
	job := func(n int, dir string, args ...string) jobResult {
		t.Helper()
		args = append(append([]string{"--checkpoint-dir", dir}, model...), args...)
		r := runJob(t, n, 0, env, args...)
		mustSucceed(t, r, strings.Join(args, " "))
		if len(r.metrics) != 2 {
			t.Fatalf("%q: %d metric lines, want 2", args, len(r.metrics))
		}
		return r
	}
	sent := func(r jobResult) (n int64) {
		for _, m := range r.metrics {
			for _, tr := range m.Transfers {
				n += tr.SentBytes
			}
		}
		return n
	}
	refDir, dir := t.TempDir(), t.TempDir()
	ref := job(1, refDir, "--precision", "bf16", "--schedule", "gpipe")
	pp := job(2, dir, "--precision", "bf16", "--schedule", "1f1b")
	compare(t, dir, refDir)
	for i, m := range ref.metrics {
		if pp.metrics[i].Loss != m.Loss {
			t.Errorf("step %d: loss %v over pp 2, %v in one process", i, pp.metrics[i].Loss, m.Loss)
		}
	}
	f32 := job(2, t.TempDir(), "--precision", "fp32", "--schedule", "1f1b")
	if b, f := sent(pp), sent(f32); b == 0 || 2*b != f {
		t.Errorf("--metrics: bf16 sent %d bytes, fp32 %d: want half", b, f)
	}
}
