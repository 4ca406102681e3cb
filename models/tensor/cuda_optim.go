package tensor

import "math"

// AdamW updates w, m and v on the device with the CPU backend's float32 arithmetic.
func (c *CUDA) AdamW(w, g, m, v *Tensor, h AdamWStep) {
	n := adamwDims(w, g, m, v)
	if n == 0 {
		return
	}
	c.launch("adamw_step", c.elementGrid(n), blk(elemBlock), 0,
		c.ptr("adamw", w), c.ptr("adamw", g), c.ptr("adamw", m), c.ptr("adamw", v), int64(n),
		h.Beta1, h.Beta2, h.GradScale, h.Decay, h.Step, h.InvBC2, h.Eps)
}

// SGD updates w and buf on the device with the CPU backend's float64 arithmetic.
func (c *CUDA) SGD(w, g, buf *Tensor, h SGDStep) {
	n := sgdDims(w, g, buf)
	if n == 0 {
		return
	}
	bitsOf := func(x float64) int64 { return int64(math.Float64bits(x)) }
	fresh := int32(0)
	if h.Fresh {
		fresh = 1
	}
	c.launch("sgd_step", c.elementGrid(n), blk(elemBlock), 0,
		c.ptr("sgd", w), c.ptr("sgd", g), c.ptr("sgd", buf), int64(n),
		bitsOf(h.GradScale), bitsOf(h.WeightDecay), bitsOf(h.Momentum), bitsOf(h.LR), fresh)
}

// adamwChunk is the elements one block of adamw_multi updates.
const adamwChunk = elemBlock * 16

// AdamWAll updates every tensor in one launch of adamw_multi.
func (c *CUDA) AdamWAll(us []AdamWUpdate) {
	const op = "adamw"
	var m multiTable
	count := 0
	for _, u := range us {
		n := adamwDims(u.W, u.G, u.M, u.V)
		if n == 0 {
			continue
		}
		for _, t := range []*Tensor{u.W, u.G, u.M, u.V} {
			m.ptr(c.ptr(op, t))
		}
		m.i64(int64(n))
		h := u.H
		for _, f := range []float32{h.Beta1, h.Beta2, h.GradScale, h.Decay, h.Step, h.InvBC2, h.Eps, 0} {
			m.f32(f)
		}
		m.i64(0)
		m.add((n + adamwChunk - 1) / adamwChunk)
		count++
	}
	if count == 0 {
		return
	}
	tab, first := c.uploadTable(op, &m)
	c.launch("adamw_multi", blk(m.blocks()), blk(elemBlock), 0, tab.ptr, first, int32(count), int64(adamwChunk))
	c.alloc.put(tab)
}
