package tensor

// Add computes y = a + b.
func (c *CUDA) Add(y, a, b *Tensor) {
	c.elementwise("add", "add", addDims(y, a, b), y, a, b)
}

// Scale multiplies t by s.
func (c *CUDA) Scale(t *Tensor, s float32) {
	p := c.ptrAny("scale", t)
	if n := t.Len(); n > 0 {
		c.launch("scale", c.chunkGrid(n), blk(elemBlock), 0, p, s, int64(n), dtBits(t))
	}
}

// elementwise runs kernel over n elements, one chunk of them a thread: the
// tensors' pointers in order, then n and their dtypes (dtBits). The caller
// has checked that every tensor holds n elements (<family>_check.go).
func (c *CUDA) elementwise(op, kernel string, n int, ts ...*Tensor) {
	args := make([]any, 0, len(ts)+2)
	for _, t := range ts {
		args = append(args, c.ptrAny(op, t))
	}
	if n > 0 {
		c.launch(kernel, c.chunkGrid(n), blk(elemBlock), 0, append(args, int64(n), dtBits(ts...))...)
	}
}
