package tensor

// SumSquaresAll is SumSquares of each tensor in turn: on the host there is no
// launch or download to save.
func (c *CPU) SumSquaresAll(ts []*Tensor) []float64 {
	out := make([]float64, len(ts))
	for i, t := range ts {
		out[i] = c.SumSquares(t)
	}
	return out
}

// AdamWAll is AdamW on each update in turn.
func (c *CPU) AdamWAll(us []AdamWUpdate) {
	for _, u := range us {
		c.AdamW(u.W, u.G, u.M, u.V, u.H)
	}
}
