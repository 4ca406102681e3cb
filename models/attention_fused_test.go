package models

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/pplaunch/pplaunch/models/tensor"
)

// attentionChoice is a backend whose FusedAttention answer is fixed, to run
// either attention path of a model whatever the backend would choose.
type attentionChoice struct {
	tensor.Backend
	fused bool
}

func (a attentionChoice) FusedAttention(int, int) bool { return a.fused }

// fusedTestGPT has heads 32 wide (the CUDA kernel's narrowest) and a
// sequence that is not a multiple of any tile.
func fusedTestGPT() Config {
	return Config{Kind: "gpt", Vocab: 37, Layers: 2, Width: 64, Heads: 2, Seq: 19}
}

// TestFusedAttentionStage: a GPT whose attention is fused trains as the
// unfused one does (float32 rounding of the reordered sums; measured
// under 1e-6), and cutting it in two stages, with or without recomputation,
// gives the bits of one stage (the layout equivalence holds for the fused
// path too).
func TestFusedAttentionStage(t *testing.T) {
	cpu := testBackend(t)
	cfg := fusedTestGPT()
	fused, unfused := attentionChoice{cpu, true}, attentionChoice{cpu, false}
	one := trainStep(t, fused, cfg, []int{2}, 2, 3, false)
	ref := trainStep(t, unfused, cfg, []int{2}, 2, 3, false)
	closeTrained(t, "fused against unfused", one, ref, 1e-5)
	sameTrained(t, "fused run twice", trainStep(t, fused, cfg, []int{2}, 2, 3, false), one)
	sameTrained(t, "fused cut in two", trainStep(t, fused, cfg, []int{1, 1}, 2, 3, false), one)
	sameTrained(t, "fused cut in two, recomputing", trainStep(t, fused, cfg, []int{1, 1}, 2, 3, true), one)
}

// TestCUDAFusedAttentionStage: on the CUDA backend (over the emulator) a
// model with 32-wide heads takes the fused kernels, and matches the CPU's
// unfused attention within float32 rounding and gives one stage's bits when
// cut in two.
func TestCUDAFusedAttentionStage(t *testing.T) {
	be := emuBackend(t)
	cfg := fusedTestGPT()
	if !be.FusedAttention(cfg.Width/cfg.Heads, cfg.Seq) {
		t.Fatal("the CUDA backend does not take the fused attention for heads 32 wide")
	}
	cudaStageMatchesCPU(t, cfg)
	one := trainStep(t, be, cfg, []int{2}, 2, 3, false)
	sameTrained(t, "cuda fused cut in two", trainStep(t, be, cfg, []int{1, 1}, 2, 3, false), one)
}

// closeTrained compares losses and gradients within tol of each tensor's
// scale, and parameters within tol.
func closeTrained(t *testing.T, what string, got, want trained, tol float64) {
	t.Helper()
	for i := range want.losses {
		if math.Abs(got.losses[i]-want.losses[i]) > tol*math.Abs(want.losses[i]) {
			t.Fatalf("%s: loss %d is %v, want %v", what, i, got.losses[i], want.losses[i])
		}
	}
	for name, w := range want.grads {
		if e := relErr(got.grads[name], w); e > tol {
			t.Fatalf("%s: gradient %s: max relative error %.3g", what, name, e)
		}
	}
	// The first AdamW update is about ±lr for every gradient well above eps,
	// so parameters are compared absolutely, as cudaStageMatchesCPU does.
	for name, w := range want.params {
		for i := range w {
			if d := math.Abs(float64(got.params[name][i]) - float64(w[i])); d > tol {
				t.Fatalf("%s: parameter %s[%d] differs by %.3g", what, name, i, d)
			}
		}
	}
}

// TestFusedAttentionActivationMemory: the fused attention keeps lse
// [B,H,T] where the unfused keeps the probabilities [B,H,T,T], so a stage's
// peak of saved activations falls by exactly layers·B·H·(T²-T) floats.
func TestFusedAttentionActivationMemory(t *testing.T) {
	cpu := testBackend(t)
	cfg := fusedTestGPT()
	const B = 3
	peak := func(be tensor.Backend) int64 {
		s, err := NewStage(cfg, []int{cfg.Layers}, 0, be, StageOptions{Seed: 7})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.BeginStep(0, 1); err != nil {
			t.Fatal(err)
		}
		tokens, targets := batch(rand.New(rand.NewPCG(1, 2)), cfg, B)
		if _, err := s.Forward(0, Input{Tokens: tokens, Targets: targets}); err != nil {
			t.Fatal(err)
		}
		return s.PeakActivationBytes()
	}
	f, u := peak(attentionChoice{cpu, true}), peak(attentionChoice{cpu, false})
	T, H := int64(cfg.Seq), int64(cfg.Heads)
	want := int64(cfg.Layers) * B * H * (T*T - T) * 4
	if u-f != want {
		t.Fatalf("peak activations %d fused, %d unfused: %d apart, want %d", f, u, u-f, want)
	}
	t.Logf("peak activations: %d bytes fused, %d unfused", f, u)
}
