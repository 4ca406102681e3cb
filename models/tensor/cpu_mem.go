package tensor

import (
	"fmt"
	"math"
)

// optGrain is the block of elements one task updates in the optimizers and
// in Scale: each element is independent, so the cut only spreads the work.
const optGrain = 1 << 14

// mustHost panics unless t is a host tensor: the CPU backend cannot read
// device memory.
func mustHost(op string, ts ...*Tensor) {
	for _, t := range ts {
		if t != nil && t.dev != nil {
			panic(fmt.Sprintf("%s: %v is a device tensor; the CPU backend computes on host tensors only", op, t.Shape))
		}
	}
}

// Alloc returns a host tensor (Go zeroes it; the contract leaves it undefined).
func (c *CPU) Alloc(shape ...int) *Tensor { return New(shape...) }

// AllocAs returns a host tensor of the dtype.
func (c *CPU) AllocAs(dt DType, shape ...int) *Tensor { return NewAs(dt, shape...) }

// Zeros returns a zeroed host tensor.
func (c *CPU) Zeros(shape ...int) *Tensor { return New(shape...) }

// Free drops t's storage; the garbage collector reclaims it.
func (c *CPU) Free(t *Tensor) { mustHost("free", t); t.Detach() }

// Upload copies src into t (rounded to nearest even for a bfloat16 t).
func (c *CPU) Upload(t *Tensor, src []float32) {
	mustHost("upload", t)
	if len(src) != t.Len() {
		panic(fmt.Sprintf("upload: %d values into %v (%d elements)", len(src), t.Shape, t.Len()))
	}
	if t.dtype == BFloat16 {
		PackBF16(t.Half, src)
		return
	}
	copy(t.Data, src)
}

// Download copies t into dst.
func (c *CPU) Download(dst []float32, t *Tensor) {
	mustHost("download", t)
	if len(dst) != t.Len() {
		panic(fmt.Sprintf("download: %v (%d elements) into %d values", t.Shape, t.Len(), len(dst)))
	}
	if t.dtype == BFloat16 {
		UnpackBF16(dst, t.Half)
		return
	}
	copy(dst, t.Data)
}

// Copy sets dst = src, converting to dst's dtype (rounding to nearest even
// into bfloat16).
func (c *CPU) Copy(dst, src *Tensor) {
	mustHost("copy", dst, src)
	mustLen("copy", "src", src, dst.Len())
	switch {
	case dst.dtype == src.dtype && dst.dtype == BFloat16:
		copy(dst.Half, src.Half)
	case dst.dtype == src.dtype:
		copy(dst.Data, src.Data)
	case dst.dtype == BFloat16:
		PackBF16(dst.Half, src.Data)
	default:
		UnpackBF16(dst.Data, src.Half)
	}
}

// Scale multiplies t by s.
func (c *CPU) Scale(t *Tensor, s float32) {
	mustF32("scale", []string{"t"}, t)
	mustHost("scale", t)
	parallelRange(t.Len(), optGrain, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			t.Data[i] *= s
		}
	})
}

// SumSquares is Σ x² in float64, in index order.
func (c *CPU) SumSquares(t *Tensor) float64 {
	mustF32("sum of squares", []string{"t"}, t)
	mustHost("sum of squares", t)
	var s float64
	for _, v := range t.Data {
		s += float64(v) * float64(v)
	}
	return s
}

// AdamW updates w, m and v elementwise in float32, as torch's CPU AdamW on
// float32 parameters.
func (c *CPU) AdamW(w, g, m, v *Tensor, h AdamWStep) {
	mustF32("adamw", []string{"w", "grad", "m", "v"}, w, g, m, v)
	mustHost("adamw", w, g, m, v)
	n := w.Len()
	mustLen("adamw", "grad", g, n)
	mustLen("adamw", "m", m, n)
	mustLen("adamw", "v", v, n)
	b1, b2 := h.Beta1, h.Beta2
	c1, c2 := 1-b1, 1-b2
	gs, dec, step, ibc2, eps := h.GradScale, h.Decay, h.Step, h.InvBC2, h.Eps
	parallelRange(n, optGrain, func(lo, hi int) {
		ws, gs_, ms, vs := w.Data[lo:hi], g.Data[lo:hi], m.Data[lo:hi], v.Data[lo:hi]
		for i, gi := range gs_ {
			gi *= gs
			mi := b1*ms[i] + c1*gi
			vi := b2*vs[i] + c2*gi*gi
			ms[i], vs[i] = mi, vi
			ws[i] = ws[i]*dec - step*mi/(float32(math.Sqrt(float64(vi)))*ibc2+eps)
		}
	})
}

// SGD updates w and buf elementwise in float64.
func (c *CPU) SGD(w, g, buf *Tensor, h SGDStep) {
	mustF32("sgd", []string{"w", "grad", "momentum"}, w, g, buf)
	mustHost("sgd", w, g, buf)
	n := w.Len()
	mustLen("sgd", "grad", g, n)
	mustLen("sgd", "momentum", buf, n)
	parallelRange(n, optGrain, func(lo, hi int) {
		ws, gs, bs := w.Data, g.Data, buf.Data
		for i := lo; i < hi; i++ {
			gi := float64(gs[i])*h.GradScale + h.WeightDecay*float64(ws[i])
			if !h.Fresh {
				gi += h.Momentum * float64(bs[i])
			}
			bs[i] = float32(gi)
			ws[i] = float32(float64(ws[i]) - h.LR*gi)
		}
	})
}
