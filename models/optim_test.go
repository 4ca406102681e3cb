package models

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/pplaunch/pplaunch/models/tensor"
)

func oneParam(name string, decay bool, w, g []float32) *Param {
	p := &Param{ParamSpec: ParamSpec{Name: name, Shape: []int{len(w)}, Decay: decay}}
	p.Value, _ = tensor.From(slices.Clone(w), len(w))
	p.Grad, _ = tensor.From(slices.Clone(g), len(g))
	return p
}

// TestAdamWMatchesTorchFormula follows torch.optim.AdamW's documented update by
// hand for two steps on one element.
func TestAdamWMatchesTorchFormula(t *testing.T) {
	p := oneParam("p", true, []float32{0.5}, []float32{0.2})
	o := NewAdamW(0.1)
	lr := 0.01
	w, m, v := 0.5, 0.0, 0.0
	for step := 1; step <= 2; step++ {
		g := 0.2 * 0.5 // clipped by half
		w *= 1 - lr*0.1
		m = 0.9*m + 0.1*g
		v = 0.95*v + 0.05*g*g
		mh := m / (1 - math.Pow(0.9, float64(step)))
		vh := v / (1 - math.Pow(0.95, float64(step)))
		w -= lr * mh / (math.Sqrt(vh) + 1e-8)
		if err := o.Step([]*Param{p}, lr, 0.5); err != nil {
			t.Fatal(err)
		}
		// The update runs in float32, as torch's: a handful of roundings of
		// values near 0.5 (spacing 6e-8) against this float64 reference.
		if got := float64(p.Value.Data[0]); math.Abs(got-w) > 1e-7 {
			t.Fatalf("step %d: w = %.9g, want %.9g", step, got, w)
		}
	}
	// A parameter without decay is not shrunk: with a zero gradient it stays.
	q := oneParam("q", false, []float32{0.5}, []float32{0})
	_ = o.Step([]*Param{q}, lr, 1)
	if q.Value.Data[0] != 0.5 {
		t.Fatalf("no-decay parameter with zero gradient moved to %v", q.Value.Data[0])
	}
}

func TestSGDMomentum(t *testing.T) {
	p := oneParam("p", false, []float32{1}, []float32{0.5})
	o := NewSGD(0.9, 0)
	_ = o.Step([]*Param{p}, 0.1, 1) // buf = 0.5, w = 0.95
	_ = o.Step([]*Param{p}, 0.1, 1) // buf = 0.9·0.5 + 0.5 = 0.95, w = 0.855
	// SGD computes in float64 and stores float32: one rounding per step of a
	// value below 1 (spacing 6e-8).
	if got := p.Value.Data[0]; math.Abs(float64(got)-0.855) > 1e-7 {
		t.Fatalf("w = %v, want 0.855", got)
	}
}

func TestOptimizerStateRoundTrip(t *testing.T) {
	for _, name := range []string{"adamw", "sgd"} {
		a, _ := NewOptimizer(name, 0.1)
		b, _ := NewOptimizer(name, 0.1)
		pa := oneParam("p", true, []float32{1, 2, 3}, []float32{0.1, -0.2, 0.3})
		pb := oneParam("p", true, []float32{1, 2, 3}, []float32{0.1, -0.2, 0.3})
		_ = a.Step([]*Param{pa}, 0.01, 1)
		copy(pb.Value.Data, pa.Value.Data)
		if err := b.SetState(a.State()); err != nil {
			t.Fatal(err)
		}
		_ = a.Step([]*Param{pa}, 0.01, 1)
		_ = b.Step([]*Param{pb}, 0.01, 1)
		if !slices.Equal(pa.Value.Data, pb.Value.Data) {
			t.Fatalf("%s: restored optimizer diverges: %v vs %v", name, pa.Value.Data, pb.Value.Data)
		}
	}
	if err := NewAdamW(0).SetState(OptimizerState{Kind: "sgd"}); err == nil {
		t.Fatal("AdamW accepted SGD state")
	}
	half := OptimizerState{Kind: "adamw", Slots: map[string]map[string][]float32{
		SlotAdamM: {"p": {1}, "q": {2}}, SlotAdamV: {"p": {1}}}}
	if err := NewAdamW(0).SetState(half); err == nil || !strings.Contains(err.Error(), "2 parameters in adam_m, 1 in adam_v") {
		t.Fatalf("AdamW state with a second moment missing: %v", err)
	}
	if _, err := NewOptimizer("lion", 0); err == nil {
		t.Fatal("unknown optimizer accepted")
	}
}

func TestLRSchedule(t *testing.T) {
	s := LRSchedule{Peak: 1e-3, Min: 1e-4, Warmup: 10, Total: 110}
	for _, c := range []struct {
		step int
		want float64
	}{{0, 1e-4}, {4, 5e-4}, {9, 1e-3}, {10, 1e-3}, {60, 5.5e-4}, {110, 1e-4}, {500, 1e-4}} {
		// float64 arithmetic on values near 1e-3: rounding is below 1e-18.
		if got := s.At(c.step); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("At(%d) = %g, want %g", c.step, got, c.want)
		}
	}
}

func TestClipping(t *testing.T) {
	sums := map[string]float64{"b": 9, "a": 16}
	if n := GlobalNorm(sums); n != 5 {
		t.Fatalf("global norm %v, want 5", n)
	}
	if c := ClipScale(5, 10); c != 1 {
		t.Fatalf("no clipping needed, scale %v", c)
	}
	// 1/(5 + 1e-6): the epsilon that keeps a zero norm finite moves it by 4e-8.
	if c := ClipScale(5, 1); math.Abs(c-0.2) > 1e-6 {
		t.Fatalf("clip scale %v, want 0.2", c)
	}
	if c := ClipScale(5, 0); c != 1 {
		t.Fatalf("clipping disabled, scale %v", c)
	}
}

// TestTrainingReducesLoss fits a tiny GPT to a fixed repeating byte pattern:
// 30 AdamW steps take the loss from about ln 256 ≈ 5.5 to under half that.
// (The pattern is fully predictable after its first bytes, so a working model
// and optimizer get far lower; a broken gradient stays near 5.5.)
func TestTrainingReducesLoss(t *testing.T) {
	be := testBackend(t)
	cfg := Config{Kind: "gpt", Vocab: 256, Layers: 2, Width: 32, Heads: 2, Seq: 16}
	s, err := NewStage(cfg, []int{2}, 0, be, StageOptions{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	pattern := []byte("the quick brown fox jumps. ")
	r := rand.New(rand.NewPCG(4, 4))
	mk := func() Input {
		var in Input
		for range 4 {
			o := r.IntN(len(pattern))
			for i := range cfg.Seq {
				in.Tokens = append(in.Tokens, int32(pattern[(o+i)%len(pattern)]))
				in.Targets = append(in.Targets, int32(pattern[(o+i+1)%len(pattern)]))
			}
		}
		return in
	}
	opt := NewAdamW(0.01)
	var first, last float64
	for step := range 30 {
		if err := s.BeginStep(0, 1); err != nil {
			t.Fatal(err)
		}
		out, err := s.Forward(0, mk())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Backward(0, nil); err != nil {
			t.Fatal(err)
		}
		if err := s.FinishStep(); err != nil {
			t.Fatal(err)
		}
		clip := ClipScale(GlobalNorm(GradSumSquares(s.Params())), 1)
		if err := opt.Step(s.Params(), 3e-3, clip); err != nil {
			t.Fatal(err)
		}
		if step == 0 {
			first = out.Loss
		}
		last = out.Loss
	}
	if first < 5 || last > first/2 {
		t.Fatalf("loss went from %.3f to %.3f, want from about 5.5 to below half", first, last)
	}
}
