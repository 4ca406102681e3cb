package models

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// TestStageTiming: with a Timing hook a stage reports one call per sublayer
// and pass, for the unit the sublayer belongs to (forward and weight passes
// in model order, input-gradient passes in reverse), with the forward's
// saved bytes adding up to what the stage holds; and the hook changes no
// bit of the loss or the gradients.
func TestStageTiming(t *testing.T) {
	be := testBackend(t)
	cfg := Config{Kind: "gpt", Vocab: 256, Layers: 3, Width: 32, Heads: 2, Seq: 16}
	cut := []int{1, 2}
	run := func(timed bool) (string, []string, []float32) {
		var calls []string
		var saved, savedI int64
		s, err := NewStage(cfg, cut, 1, be, StageOptions{Seed: 3})
		if err != nil {
			t.Fatal(err)
		}
		if timed {
			s.SetTiming(func(unit int, pass Pass, d time.Duration, b int64) {
				if d < 0 {
					t.Errorf("negative duration %v", d)
				}
				calls = append(calls, fmt.Sprintf("%d%c", unit, "FIW"[pass]))
				switch pass {
				case PassF:
					saved += b
				case PassI:
					savedI += b
				}
			})
		}
		if err := s.BeginStep(0, 1); err != nil {
			t.Fatal(err)
		}
		r := rand.New(rand.NewPCG(1, 2))
		_, targets := batch(r, cfg, 2)
		act := be.Alloc(2, cfg.Seq, cfg.Width)
		vals := make([]float32, act.Len())
		for i := range vals {
			vals[i] = float32(r.NormFloat64())
		}
		be.Upload(act, vals)
		out, err := s.Forward(0, Input{Act: act, Targets: targets})
		if err != nil {
			t.Fatal(err)
		}
		if timed && saved != s.ActivationBytes() {
			t.Errorf("the sublayers report %d saved bytes, the stage holds %d", saved, s.ActivationBytes())
		}
		if _, err := s.BackwardInput(0, nil); err != nil {
			t.Fatal(err)
		}
		// (The input pass frees h and the attention's saved state but keeps
		// dh and dy for the weight pass: with the fused attention's small
		// lse that is more than it frees, so savedI may exceed saved.)
		if timed && (savedI != s.ActivationBytes() || savedI <= 0) {
			t.Errorf("after the input pass the sublayers report %d bytes, the stage holds %d (of %d)", savedI, s.ActivationBytes(), saved)
		}
		if err := s.BackwardWeight(0); err != nil {
			t.Fatal(err)
		}
		if err := s.FinishStep(); err != nil {
			t.Fatal(err)
		}
		g := make([]float32, s.GradTensor().Len())
		be.Download(g, s.GradTensor())
		return fmt.Sprint(out.Loss), calls, g
	}
	loss, calls, grads := run(true)
	loss0, none, grads0 := run(false)
	// Stage 1 holds blocks 1 and 2 (two sublayers each) and the head (unit 3).
	want := []string{"1F", "1F", "2F", "2F", "3F", "3I", "2I", "2I", "1I", "1I", "1W", "1W", "2W", "2W", "3W"}
	if !slices.Equal(calls, want) {
		t.Errorf("calls %v, want %v", calls, want)
	}
	if len(none) != 0 {
		t.Errorf("calls without a hook: %v", none)
	}
	if loss != loss0 || !slices.Equal(grads, grads0) {
		t.Errorf("timing changed the numbers: loss %s vs %s", loss, loss0)
	}
}
