package tensor

// The unfused attention on bfloat16 tensors (head widths the fused kernels
// do not take): its kernels and strided batched products are float32 only,
// so each bfloat16 input is widened into a float32 copy, the float32
// attention runs, and each bfloat16 output is rounded once from its float32
// result, as the contract says (and the CPU backend does). The T×T
// probabilities make this path the one to avoid at long sequences in any
// precision; the fused attention reads bfloat16 itself.

// wide is t as float32: t itself, or a float32 tensor of its shape holding
// t's values widened (read) or undefined.
func (c *CUDA) wide(t *Tensor, read bool) *Tensor {
	if t.dtype == Float32 {
		return t
	}
	w := c.Alloc(t.Shape...)
	if read {
		c.Copy(w, t)
	}
	return w
}

// narrow ends wide: w's values rounded into t (write), and w freed.
func (c *CUDA) narrow(t, w *Tensor, write bool) {
	if w == t {
		return
	}
	if write {
		c.Copy(t, w)
	}
	c.Free(w)
}

// attentionBF16 is Attention on widened copies.
func (c *CUDA) attentionBF16(out, probs, qkv *Tensor, heads int) {
	o, p, q := c.wide(out, false), c.wide(probs, false), c.wide(qkv, true)
	c.Attention(o, p, q, heads)
	c.narrow(out, o, true)
	c.narrow(probs, p, true)
	c.narrow(qkv, q, false)
}

// attentionBackwardBF16 is AttentionBackward on widened copies.
func (c *CUDA) attentionBackwardBF16(dqkv, dout, qkv, probs *Tensor, heads int) {
	dq, do, q, p := c.wide(dqkv, false), c.wide(dout, true), c.wide(qkv, true), c.wide(probs, true)
	c.AttentionBackward(dq, do, q, p, heads)
	c.narrow(dqkv, dq, true)
	c.narrow(dout, do, false)
	c.narrow(qkv, q, false)
	c.narrow(probs, p, false)
}
