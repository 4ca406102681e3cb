package tensor

// colSums sets s[j] = Σ_r m[r,j] as the product mᵀ·1, which the BLAS does with
// vector instructions; the blocks of the product depend on the shape only.
func (c *CPU) colSums(s, m []float32, rows, cols int) {
	ones := c.scratch(rows)
	for i := range ones {
		ones[i] = 1
	}
	c.gemm(true, false, cols, 1, rows, 1, m, cols, ones, 1, 0, s, 1)
	c.release(ones)
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

// SumSquaresAll is SumSquares of each tensor in turn: on the host there is no
// launch or download to save.
func (c *CPU) SumSquaresAll(ts []*Tensor) []float64 {
	out := make([]float64, len(ts))
	for i, t := range ts {
		out[i] = c.SumSquares(t)
	}
	return out
}
