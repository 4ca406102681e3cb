package tensor

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// The CUDA backend's bfloat16 operations over the emulator: the op tests of
// cuda_*_emu_test.go run each op at both dtypes (acts); this file has their
// helpers and the tests of bfloat16 alone. The reference is the CPU
// backend's float32 operations with each bfloat16 input rounded (RoundBF16)
// before and each bfloat16 output rounded after:
// what "read at its dtype, compute in float32, write rounded once" means.
// Where the GPU computes the same float32 operations in the same order
// (elementwise, embeddings, the cross-entropy's backward), the bits must
// match. Where it sums in another order (products, row statistics), the two
// float32 results differ by at most the float32 bound of that sum (gemmTol,
// rowTol, relative to the output's scale), and rounding them to bfloat16 can
// then land on neighbouring values: one bfloat16 step at the value's
// magnitude, on top of the float32 bound.

// rb is h with every value rounded to the nearest bfloat16.
func rb(h *Tensor) *Tensor {
	if h == nil {
		return nil
	}
	o := h.Clone()
	for i, v := range o.Data {
		o.Data[i] = RoundBF16(v)
	}
	return o
}

// host is a host tensor of the values.
func host(t *testing.T, v []float32, shape ...int) *Tensor {
	t.Helper()
	h, err := From(v, shape...)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// upAs copies a float32 host tensor into a new device tensor of the dtype.
func upAs(c *CUDA, h *Tensor, dt DType) *Tensor {
	if h == nil {
		return nil
	}
	d := c.AllocAs(dt, h.Shape...)
	c.Upload(d, h.Data)
	return d
}

// rbIf is rb(h) for bfloat16 activations, h itself (a clone) for float32.
func rbIf(dt DType, h *Tensor) *Tensor {
	if h == nil {
		return nil
	}
	if dt == BFloat16 {
		return rb(h)
	}
	return h.Clone()
}

// roundIf rounds want in place where the output is bfloat16.
func roundIf(dt DType, want []float32) []float32 {
	if dt == BFloat16 {
		for i, v := range want {
			want[i] = RoundBF16(v)
		}
	}
	return want
}

// bf16Step is the spacing of bfloat16 values at |w|'s magnitude.
func bf16Step(w float32) float64 {
	if w == 0 {
		return 0
	}
	_, e := math.Frexp(math.Abs(float64(w)))
	return math.Ldexp(1, e-8)
}

// checkBF16 compares got with want element by element: within one bfloat16
// step at want's magnitude plus tol relative to want's scale (the float32
// bound of a sum taken in another order, which rounding may turn into a
// neighbouring bfloat16).
func checkBF16(t *testing.T, what string, got, want []float32, tol float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	var scale float64
	for _, w := range want {
		scale = math.Max(scale, math.Abs(float64(w)))
	}
	steps := 0
	for i, w := range want {
		d := math.Abs(float64(got[i]) - float64(w))
		if math.IsNaN(float64(got[i])) || d > bf16Step(w)+tol*scale {
			t.Fatalf("%s[%d] = %v, want %v (one bfloat16 step %g + %g)", what, i, got[i], w, bf16Step(w), tol*scale)
		}
		if d != 0 {
			steps++
		}
	}
	t.Logf("%s: %d of %d values one step off", what, steps, len(want))
}

// checkOut is checkBF16 against the rounded reference for a bfloat16 output,
// check (the float32 bound alone) for a float32 one.
func checkOut(t *testing.T, what string, dt DType, got, want []float32, tol float64) {
	t.Helper()
	if dt == BFloat16 {
		checkBF16(t, what, got, roundIf(dt, want), tol)
		return
	}
	check(t, what, got, want, tol)
}

// TestCUDABF16Conversions: Copy between dtypes rounds to nearest even (ties
// to even, overflow to infinity, NaN kept) exactly as ToBF16, and widens
// exactly; Σx² of a bfloat16 tensor is the float64 sum of its values; a
// bfloat16 tensor stages through a pinned buffer of 2 bytes a value.
func TestCUDABF16Conversions(t *testing.T) {
	c := emuCUDA(t)
	vals := []float32{0, float32(math.Copysign(0, -1)), 1, 1 + 1.0/256, 1 + 3.0/256, -1 - 1.0/256, 3.4e38, -3.4e38,
		1e-40, -1e-41, float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()), 0.1, -7.77e-3, 65504.5}
	f := up(c, host(t, vals, len(vals)))
	h := c.AllocAs(BFloat16, len(vals))
	c.Copy(h, f)
	back := c.Alloc(len(vals))
	c.Copy(back, h)
	got := down(c, back)
	for i, v := range vals {
		if want := RoundBF16(v); math.Float32bits(got[i]) != math.Float32bits(want) {
			t.Errorf("convert %v (%#08x): %v (%#08x), want %v (%#08x)", v, math.Float32bits(v), got[i], math.Float32bits(got[i]), want, math.Float32bits(want))
		}
	}
	r := rand.New(rand.NewPCG(69, 70))
	for _, n := range []int{1, 1000, 100003} {
		x := randTensor(r, n)
		var want float64
		for _, v := range rb(x).Data {
			want += float64(v) * float64(v)
		}
		s := c.SumSquares(upAs(c, x, BFloat16))
		if math.Abs(s-want) > 1e-12*want {
			t.Fatalf("Σx² of %d bfloat16 values: %v, want %v", n, s, want)
		}
	}
	x := upAs(c, host(t, []float32{1, 2.5, -3, 1 + 1.0/128}, 4), BFloat16)
	s := c.StageOut(x)
	if err := s.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	if s.Host != nil || len(s.Half) != 4 || s.Half[1] != ToBF16(2.5) || s.Half[3] != ToBF16(1+1.0/128) {
		t.Fatalf("staged out a bfloat16 tensor as Host %v Half %#04x", s.Host, s.Half)
	}
	s.Release()
	in := c.PinnedAs(BFloat16, 2)
	in.Half[0], in.Half[1] = ToBF16(-0.5), ToBF16(8)
	c.StageIn(x.View(2, 2), in)
	in.Await()
	in.Release()
	if got := down(c, x); got[0] != 1 || got[1] != 2.5 || got[2] != -0.5 || got[3] != 8 {
		t.Fatalf("after staging in: %v", got)
	}
	defer func() {
		if p := recover(); p == nil {
			t.Error("staging a float32 buffer into a bfloat16 tensor did not panic")
		}
	}()
	c.StageIn(x, c.Pinned(4))
}

// TestCUDAKernelsIgnoreAlignment: the row and elementwise kernels read 16
// bytes at a time only where a tensor lies aligned, with the same additions
// in the same order as element by element, so the same values give the same
// bits in a tensor of their own and in a view one element into another
// (never aligned).
func TestCUDAKernelsIgnoreAlignment(t *testing.T) {
	c := emuCUDA(t)
	r := rand.New(rand.NewPCG(71, 72))
	for _, act := range acts {
		for _, sh := range [][2]int{{5, 64}, {3, 100}, {9, 8}} {
			n, d := sh[0], sh[1]
			x, g, b, dy := randTensor(r, n, d), randTensor(r, d), randTensor(r, d), randTensor(r, n, d)
			targets := make([]int32, n)
			for i := range targets {
				targets[i] = int32(r.IntN(d - 1))
			}
			cg, cb := up(c, g), up(c, b)
			// at gives the values in a tensor of their own (off 0) or one
			// element into a larger one.
			at := func(h *Tensor, off int) *Tensor {
				whole := c.AllocAs(act, h.Len()+off)
				v := whole.View(off, h.Shape...)
				c.Upload(v, h.Data)
				return v
			}
			run := func(off int) [][]float32 {
				cx, cdy := at(x, off), at(dy, off)
				y, mean, rstd, dx := at(x, off), c.Alloc(n), c.Alloc(n), at(x, off)
				c.LayerNorm(y, mean, rstd, cx, cg, cb, 1e-5)
				c.LayerNormBackwardInput(dx, cdy, cx, mean, rstd, cg)
				probs, dl := at(x, off), at(x, off)
				loss := c.CrossEntropy(probs, cx, targets, d-1)
				c.CrossEntropyBackward(dl, probs, targets, 0.5)
				gy, th, gdx, sum, cp := at(x, off), at(x, off), at(x, off), at(x, off), at(x, off)
				c.Gelu(gy, th, cx)
				c.GeluBackward(gdx, cdy, cx, th)
				c.Add(sum, cx, cdy)
				c.Copy(cp, cx)
				c.Scale(cp, 0.37)
				return [][]float32{down(c, y), down(c, mean), down(c, rstd), down(c, dx), down(c, probs), down(c, dl), {float32(loss)},
					down(c, gy), down(c, th), down(c, gdx), down(c, sum), down(c, cp)}
			}
			a, u := run(0), run(1)
			for i := range a {
				check(t, fmt.Sprintf("%v %v output %d aligned against one element in", act, sh, i), u[i], a[i], 0)
			}
		}
	}
}
