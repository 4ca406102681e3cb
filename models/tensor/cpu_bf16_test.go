package tensor

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// bf16Args makes one operation's tensors in one of two modes. In bf16 mode
// activations (act, out) are BFloat16 tensors and parameters float32. In
// reference mode everything is float32, activations hold their bfloat16
// values, and a product's parameter operand (weight) is rounded to bfloat16
// by the test itself: the contract written with float32 operations and
// RoundBF16 alone.
type bf16Args struct {
	bf16 bool
}

// act is src as an activation input (its values rounded to bfloat16).
func (m bf16Args) act(src *Tensor) *Tensor {
	if m.bf16 {
		t := NewAs(BFloat16, src.Shape...)
		PackBF16(t.Half, src.Data)
		return t
	}
	t := New(src.Shape...)
	for i, v := range src.Data {
		t.Data[i] = RoundBF16(v)
	}
	return t
}

// weight is a float32 parameter read by a product: rounded to bfloat16 in
// the reference, given as it is to the backend.
func (m bf16Args) weight(src *Tensor) *Tensor {
	if m.bf16 {
		return src.Clone()
	}
	t := src.Clone()
	for i, v := range t.Data {
		t.Data[i] = RoundBF16(v)
	}
	return t
}

// out is an activation output: bfloat16, or float32 in the reference.
func (m bf16Args) out(shape ...int) *Tensor {
	if m.bf16 {
		return NewAs(BFloat16, shape...)
	}
	return New(shape...)
}

// bf16Case is one operation over inputs drawn once: run makes its tensors
// with a and returns its outputs (parameters by value, activations by a).
type bf16Case struct {
	name string
	run  func(be *CPU, a bf16Args) []*Tensor
}

// bf16Cases covers every operation of the Backend on odd shapes, with the
// outputs that alias inputs as the models use them.
func bf16Cases(r *rand.Rand) []bf16Case {
	const N, in, out, V, valid = 13, 11, 7, 29, 27
	rt := func(shape ...int) *Tensor { return randTensor(r, shape...) }
	x, w, bias, res, dy := rt(N, in), rt(out, in), rt(out), rt(N, out), rt(N, out)
	g, b := rt(in), rt(in)
	mean, rstd := rt(N), rt(N)
	for i := range rstd.Data {
		rstd.Data[i] = 0.5 + float32(math.Abs(float64(rstd.Data[i])))
	}
	qkv, dout, probs := rt(2, 9, 3*12), rt(2, 9, 12), rt(2, 3, 9, 9)
	for i := range probs.Data {
		probs.Data[i] = float32(math.Abs(float64(probs.Data[i])))
	}
	logits, pr := rt(N, V), rt(N, V)
	wte, wpe := rt(V, in), rt(N, in)
	tokens, targets := make([]int32, N), make([]int32, N)
	for i := range tokens {
		tokens[i], targets[i] = int32(r.IntN(V)), int32(r.IntN(valid))
	}
	big, tall, c0 := rt(17, 23), rt(19, 23), rt(17, 19)
	u, v := rt(N, in), rt(N, in)
	return []bf16Case{
		{"matmul", func(be *CPU, a bf16Args) []*Tensor {
			c := a.act(c0)
			be.MatMul(c, a.act(big), false, a.weight(tall), true, 0.75, 0.5)
			return []*Tensor{c}
		}},
		{"linear", func(be *CPU, a bf16Args) []*Tensor {
			y := a.out(N, out)
			be.Linear(y, a.act(x), a.weight(w), bias, a.act(res))
			return []*Tensor{y}
		}},
		{"linear no bias", func(be *CPU, a bf16Args) []*Tensor {
			y := a.out(N, out)
			be.Linear(y, a.act(x), a.weight(w), nil, nil)
			return []*Tensor{y}
		}},
		{"linear backward input", func(be *CPU, a bf16Args) []*Tensor {
			dx := a.out(N, in)
			be.LinearBackwardInput(dx, a.act(dy), a.weight(w))
			return []*Tensor{dx}
		}},
		{"linear backward weight", func(be *CPU, a bf16Args) []*Tensor {
			dw, db := New(out, in), New(out)
			be.LinearBackwardWeight(dw, db, a.act(dy), a.act(x))
			return []*Tensor{dw, db}
		}},
		{"layernorm", func(be *CPU, a bf16Args) []*Tensor {
			y, mu, rs := a.out(N, in), New(N), New(N)
			be.LayerNorm(y, mu, rs, a.act(x), g, b, 1e-5)
			return []*Tensor{y, mu, rs}
		}},
		{"layernorm backward input", func(be *CPU, a bf16Args) []*Tensor {
			dx := a.out(N, in)
			be.LayerNormBackwardInput(dx, a.act(x), a.act(u), mean, rstd, g)
			return []*Tensor{dx}
		}},
		{"layernorm backward weight", func(be *CPU, a bf16Args) []*Tensor {
			dg, dbeta := New(in), New(in)
			be.LayerNormBackwardWeight(dg, dbeta, a.act(x), a.act(u), mean, rstd)
			return []*Tensor{dg, dbeta}
		}},
		{"gelu", func(be *CPU, a bf16Args) []*Tensor {
			y, th := a.out(N, in), a.out(N, in)
			be.Gelu(y, th, a.act(x))
			return []*Tensor{y, th}
		}},
		{"gelu backward in place", func(be *CPU, a bf16Args) []*Tensor {
			d := a.act(u)
			be.GeluBackward(d, d, a.act(x), a.act(v))
			return []*Tensor{d}
		}},
		{"gelu exact", func(be *CPU, a bf16Args) []*Tensor {
			y, cdf := a.out(N, in), a.out(N, in)
			be.GeluExact(y, cdf, a.act(x))
			return []*Tensor{y, cdf}
		}},
		{"gelu exact backward in place", func(be *CPU, a bf16Args) []*Tensor {
			d := a.act(u)
			be.GeluExactBackward(d, d, a.act(x), a.act(v))
			return []*Tensor{d}
		}},
		{"attention", func(be *CPU, a bf16Args) []*Tensor {
			o, p := a.out(2, 9, 12), a.out(2, 3, 9, 9)
			be.Attention(o, p, a.act(qkv), 3)
			return []*Tensor{o, p}
		}},
		{"attention backward", func(be *CPU, a bf16Args) []*Tensor {
			d := a.out(2, 9, 36)
			be.AttentionBackward(d, a.act(dout), a.act(qkv), a.act(probs), 3)
			return []*Tensor{d}
		}},
		{"embed", func(be *CPU, a bf16Args) []*Tensor {
			y := a.out(N, in)
			be.Embed(y, wte, wpe, tokens[:N])
			return []*Tensor{y}
		}},
		{"embed backward", func(be *CPU, a bf16Args) []*Tensor {
			dwte, dwpe := New(V, in), New(N, in)
			be.EmbedBackward(dwte, dwpe, a.act(u), tokens)
			return []*Tensor{dwte, dwpe}
		}},
		{"cross entropy in place", func(be *CPU, a bf16Args) []*Tensor {
			l := a.act(logits)
			loss := be.CrossEntropy(l, l, targets, valid)
			return []*Tensor{l, {Shape: []int{1}, Data: []float32{float32(loss)}}}
		}},
		{"cross entropy backward", func(be *CPU, a bf16Args) []*Tensor {
			d := a.out(N, V)
			be.CrossEntropyBackward(d, a.act(pr), targets, 0.25)
			return []*Tensor{d}
		}},
		{"add in place", func(be *CPU, a bf16Args) []*Tensor {
			s := a.act(res)
			be.Add(s, s, a.act(dy))
			return []*Tensor{s}
		}},
	}
}

// bitsOf is t's values as bfloat16 bits where t is bfloat16, else float32 bits.
func bitsOf(t *Tensor) []uint32 {
	out := make([]uint32, t.Len())
	for i := range out {
		if t.DType() == BFloat16 {
			out[i] = uint32(t.Half[i])
		} else {
			out[i] = math.Float32bits(t.Data[i])
		}
	}
	return out
}

// TestBF16OperationsFollowTheContract runs every operation on bfloat16
// activations and compares its bits with the contract written out: the
// float32 operation on the bfloat16 values (weights of products rounded),
// each bfloat16 output rounded once. Outputs that stay float32 (weight
// gradients, statistics, the loss) must be the reference's bits exactly.
func TestBF16OperationsFollowTheContract(t *testing.T) {
	for _, be := range backends(t) {
		for _, c := range bf16Cases(rand.New(rand.NewPCG(22, 1))) {
			got := c.run(be, bf16Args{bf16: true})
			want := c.run(be, bf16Args{})
			again := c.run(be, bf16Args{bf16: true})
			for i := range got {
				g := got[i]
				w := want[i]
				if g.DType() == BFloat16 {
					r := NewAs(BFloat16, w.Shape...)
					PackBF16(r.Half, w.Data)
					w = r
				}
				if !slices.Equal(bitsOf(g), bitsOf(w)) {
					t.Errorf("%s: %s output %d (%v): bits differ from the float32 reference rounded once", be.Name(), c.name, i, g)
				}
				if !slices.Equal(bitsOf(g), bitsOf(again[i])) {
					t.Errorf("%s: %s output %d: two runs give different bits", be.Name(), c.name, i)
				}
			}
		}
	}
}

// TestBF16LinearRoundsWeights: a product with a bfloat16 operand reads its
// float32 weight rounded, which changes the result on most entries.
func TestBF16LinearRoundsWeights(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	be, err := NewCPU("go")
	if err != nil {
		t.Fatal(err)
	}
	x, w := randTensor(r, 4, 64), randTensor(r, 8, 64)
	xb := NewAs(BFloat16, 4, 64)
	PackBF16(xb.Half, x.Data)
	y := NewAs(BFloat16, 4, 8)
	be.Linear(y, xb, w, nil, nil)
	// The float32 weight unrounded gives another product on most entries.
	xf := New(4, 64)
	UnpackBF16(xf.Data, xb.Half)
	yf := New(4, 8)
	be.Linear(yf, xf, w, nil, nil)
	differ := 0
	for i, h := range y.Half {
		if h != ToBF16(yf.Data[i]) {
			differ++
		}
	}
	if differ == 0 {
		t.Fatal("a bfloat16 linear gave the bits of the unrounded float32 weight: the weight was not rounded")
	}
}

// TestBF16RefusedDtypes: statistics, weight gradients and optimizer state
// are float32; a bfloat16 one is a panic naming the operation and tensor.
func TestBF16RefusedDtypes(t *testing.T) {
	be, _ := NewCPU("go")
	h := func(shape ...int) *Tensor { return NewAs(BFloat16, shape...) }
	for _, c := range []struct {
		want string
		f    func()
	}{
		{"layernorm: mean is bfloat16", func() { be.LayerNorm(h(2, 3), h(2), New(2), h(2, 3), New(3), New(3), 1e-5) }},
		{"linear backward weight: dw is bfloat16", func() { be.LinearBackwardWeight(h(2, 3), nil, h(4, 2), h(4, 3)) }},
		{"embed backward: dwte is bfloat16", func() { be.EmbedBackward(h(5, 3), nil, h(2, 3), []int32{0, 1}) }},
		{"adamw: m is bfloat16", func() { be.AdamW(New(3), New(3), h(3), New(3), AdamWStep{}) }},
		{"sum of squares: t is bfloat16", func() { be.SumSquares(h(3)) }},
	} {
		func() {
			defer func() {
				msg, _ := recover().(string)
				if !strings.Contains(msg, c.want) || !strings.Contains(msg, "want float32") {
					t.Errorf("panic %q, want one containing %q", msg, c.want)
				}
			}()
			c.f()
		}()
	}
}
