package models

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/pplaunch/pplaunch/models/tensor"
)

func testBackend(t testing.TB) tensor.Backend {
	t.Helper()
	be, err := tensor.NewCPUFromEnv()
	if err != nil {
		t.Fatal(err)
	}
	return be
}

func randT(r *rand.Rand, std float64, shape ...int) *tensor.Tensor {
	x := tensor.New(shape...)
	for i := range x.Data {
		x.Data[i] = float32(r.NormFloat64() * std)
	}
	return x
}

func newParam(r *rand.Rand, name string, std float64, shape ...int) *Param {
	p := &Param{ParamSpec: ParamSpec{Name: name, Shape: shape}, Value: randT(r, std, shape...)}
	p.Grad = tensor.New(shape...)
	return p
}

// gradTolerance is the agreement asked of analytic and central-difference
// gradients. The forward pass runs in float32 (about 7 significant digits), so
// with a step of 1e-2 the difference quotient carries an error near 1e-4 in
// absolute terms; 2% relative plus 2e-3 absolute is well above that noise and
// far below the size of any real mistake (a wrong sign, factor or index).
const (
	gradStep = 1e-2
	gradRel  = 2e-2
	gradAbs  = 2e-3
)

func agree(a, n float64) bool {
	return math.Abs(a-n) <= gradAbs+gradRel*math.Max(math.Abs(a), math.Abs(n))
}

// checkSublayer compares a sublayer's backward (input and weight parts) with
// central differences of loss = Σ y·R (or the head's own loss).
func checkSublayer(t *testing.T, be tensor.Backend, sl sublayer, in func() *flow, r *rand.Rand) {
	t.Helper()
	ps := sl.params()
	off := 0
	for _, p := range ps {
		p.off = off
		off += p.Numel()
	}
	ar := newArena()
	f0 := in()
	f0.al = &alloc{a: ar}
	x0 := f0.x
	tp := sl.forward(be, f0)
	var R *tensor.Tensor
	if f0.x != nil {
		R = randT(r, 1, f0.x.Shape...)
	}
	loss := func() float64 {
		f := in()
		f.x, f.al = x0, &alloc{a: ar}
		sl.forward(be, f)
		if R == nil {
			return f.loss
		}
		var s float64
		for i, v := range f.x.Data {
			s += float64(v) * float64(R.Data[i])
		}
		return s
	}
	dx := tp.backwardInput(be, f0.al, R, 1)
	g := make(gradBuf, off)
	tp.backwardWeight(be, g)
	numeric := func(v *float32) float64 {
		old := *v
		*v = old + gradStep
		lp := loss()
		*v = old - gradStep
		lm := loss()
		*v = old
		return (lp - lm) / (2 * gradStep)
	}
	check := func(what string, vals []float32, grad []float32) {
		for k := range 6 {
			i := (k * 7919) % len(vals)
			if k == 0 {
				i = r.IntN(len(vals))
			}
			n := numeric(&vals[i])
			if a := float64(grad[i]); !agree(a, n) {
				t.Errorf("%s[%d]: analytic %.6g, numeric %.6g", what, i, a, n)
			}
		}
	}
	for _, p := range ps {
		check(p.Name, p.Value.Data, g.of(p).Data)
	}
	if x0 != nil && dx != nil {
		check("input", x0.Data, dx.Data)
	}
}

func TestGradientEveryLayer(t *testing.T) {
	be := testBackend(t)
	r := rand.New(rand.NewPCG(11, 12))
	B, T, D, H, V := 2, 5, 8, 2, 11
	ln := func(name string) layerNorm {
		return layerNorm{g: newParam(r, name+".weight", 0.3, D), b: newParam(r, name+".bias", 0.3, D)}
	}
	lin := func(name string, out, in int) linear {
		return linear{w: newParam(r, name+".weight", 0.4, out, in), b: newParam(r, name+".bias", 0.3, out)}
	}
	x := randT(r, 1, B, T, D)
	tokens := make([]int32, B*T)
	targets := make([]int32, B*T)
	for i := range tokens {
		tokens[i], targets[i] = int32(r.IntN(V)), int32(r.IntN(V))
	}
	act := func() *flow { return &flow{x: x, tokens: tokens, targets: targets} }
	cases := []struct {
		name string
		sl   sublayer
		in   func() *flow
	}{
		{"embedding", &embedding{wte: newParam(r, "wte", 1, V, D), wpe: newParam(r, "wpe", 1, T, D), seq: T},
			func() *flow { return &flow{tokens: tokens} }},
		{"embedding without positions", &embedding{wte: newParam(r, "wte", 1, V, D), seq: T},
			func() *flow { return &flow{tokens: tokens} }},
		{"attention block", &residual{ln: ln("ln_1"), in: lin("c_attn", 3*D, D), out: lin("c_proj", D, D), mid: attention{heads: H}}, act},
		{"mlp block", &residual{ln: ln("ln_2"), in: lin("c_fc", 4*D, D), out: lin("c_proj", D, 4*D), mid: gelu{}}, act},
		{"mlp block, exact gelu", &residual{ln: ln("ln_2"), in: lin("c_fc", 4*D, D), out: lin("c_proj", D, 4*D), mid: gelu{exact: true}}, act},
		{"head and loss", &head{ln: ln("ln_f"), w: newParam(r, "lm_head", 0.5, V, D)}, act},
		// Five padding rows after the vocabulary: masked out of the loss.
		{"head and loss, padded", &head{ln: ln("ln_f"), w: newParam(r, "lm_head", 0.5, V+5, D), vocab: V}, act},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { checkSublayer(t, be, c.sl, c.in, r) })
	}
}

// tinyGPT is the model most tests use: small enough for -race.
func tinyGPT() Config {
	return Config{Kind: "gpt", Vocab: 256, Layers: 4, Width: 16, Heads: 2, Seq: 8}
}

func batch(r *rand.Rand, cfg Config, b int) (tokens, targets []int32) {
	tokens = make([]int32, b*cfg.Seq)
	targets = make([]int32, b*cfg.Seq)
	for i := range tokens {
		tokens[i], targets[i] = int32(r.IntN(cfg.Vocab)), int32(r.IntN(cfg.Vocab))
	}
	return tokens, targets
}

func TestGradientWholeGPT(t *testing.T) {
	be := testBackend(t)
	for _, tied := range []bool{false, true} {
		t.Run(fmt.Sprintf("tied=%v", tied), func(t *testing.T) {
			cfg := tinyGPT()
			cfg.Layers, cfg.Tied = 2, tied
			s, err := NewStage(cfg, []int{2}, 0, be, StageOptions{Seed: 3})
			if err != nil {
				t.Fatal(err)
			}
			r := rand.New(rand.NewPCG(13, 14))
			// Larger weights than the GPT-2 init, so every gradient is well above
			// the float32 noise of the difference quotient.
			for _, p := range s.Params() {
				if p.TiedTo != "" {
					continue
				}
				for i := range p.Value.Data {
					p.Value.Data[i] += float32(r.NormFloat64() * 0.3)
				}
			}
			if tied {
				copy(s.Param("lm_head.weight").Value.Data, s.Param("transformer.wte.weight").Value.Data)
			}
			tokens, targets := batch(r, cfg, 2)
			in := Input{Tokens: tokens, Targets: targets}
			loss := func() float64 {
				out, err := s.Forward(99, in)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := s.BackwardInput(99, nil); err != nil {
					t.Fatal(err)
				}
				s.Discard(99) // nothing accumulated
				return out.Loss
			}
			if err := s.BeginStep(0, 1); err != nil {
				t.Fatal(err)
			}
			if _, err := s.Forward(0, in); err != nil {
				t.Fatal(err)
			}
			if _, err := s.Backward(0, nil); err != nil {
				t.Fatal(err)
			}
			if err := s.FinishStep(); err != nil {
				t.Fatal(err)
			}
			s.SumLocalTiedGrads()
			for _, p := range s.Params() {
				if p.TiedTo != "" {
					continue
				}
				copyTo := s.Param("lm_head.weight")
				for k := range 3 {
					i := (k*104729 + r.IntN(7)) % p.Numel()
					set := func(v float32) {
						p.Value.Data[i] = v
						if tied && p.Name == "transformer.wte.weight" {
							copyTo.Value.Data[i] = v
						}
					}
					old := p.Value.Data[i]
					set(old + gradStep)
					lp := loss()
					set(old - gradStep)
					lm := loss()
					set(old)
					n := (lp - lm) / (2 * gradStep)
					if a := float64(p.Grad.Data[i]); !agree(a, n) {
						t.Errorf("%s[%d]: analytic %.6g, numeric %.6g", p.Name, i, a, n)
					}
				}
			}
		})
	}
}
