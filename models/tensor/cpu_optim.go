package tensor

import "math"

// AdamW updates w, m and v elementwise in float32, as torch's CPU AdamW on
// float32 parameters.
func (c *CPU) AdamW(w, g, m, v *Tensor, h AdamWStep) {
	mustF32("adamw", []string{"w", "grad", "m", "v"}, w, g, m, v)
	mustHost("adamw", w, g, m, v)
	n := adamwDims(w, g, m, v)
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
	n := sgdDims(w, g, buf)
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

// AdamWAll is AdamW on each update in turn.
func (c *CPU) AdamWAll(us []AdamWUpdate) {
	for _, u := range us {
		c.AdamW(u.W, u.G, u.M, u.V, u.H)
	}
}
