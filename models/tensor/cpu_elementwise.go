package tensor

// Add computes y = a + b.
func (c *CPU) Add(y, a, b *Tensor) {
	if m := c.mix(y, a, b); m != nil {
		defer m.done()
		a, b = m.in(a), m.in(b)
		y = m.out(y)
	}
	parallelRange(addDims(y, a, b), 1<<14, func(lo, hi int) {
		ys, as, bs := y.Data[lo:hi], a.Data[lo:hi], b.Data[lo:hi]
		for i := range ys {
			ys[i] = as[i] + bs[i]
		}
	})
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
