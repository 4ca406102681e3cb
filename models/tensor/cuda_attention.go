package tensor

import "math"

// Attention is causal multi-head self-attention: per sequence, one strided
// batched GEMM over the heads for the scores q·kᵀ/√hd (straight into probs),
// the causal softmax kernel over every row, and one for P·v. The products
// include the masked upper triangle (zeros after the softmax): at GPT-2 sizes
// cuBLAS on the full square beats skipping it.
func (c *CUDA) Attention(out, probs, qkv *Tensor, heads int) {
	if anyBF16(out, probs, qkv) {
		c.attentionBF16(out, probs, qkv, heads)
		return
	}
	B, T, D, hd := attnDims("attention", qkv, out, probs, heads)
	if B*T == 0 {
		return
	}
	scale := float32(1 / math.Sqrt(float64(hd)))
	ld, tt := 3*D, int64(T)*int64(T)
	q, pp, op := c.ptr("attention", qkv), c.ptr("attention", probs), c.ptr("attention", out)
	for b := range B {
		qb := q + devPtr(b*T*ld)*4
		kb := qb + devPtr(D)*4
		pb := pp + devPtr(int64(b*heads)*tt)*4
		// S_h = q_h·k_hᵀ: [T,hd]·[hd,T], heads hd columns apart.
		c.gemmBatched(false, true, T, T, hd, scale, qb, ld, int64(hd), kb, ld, int64(hd), 0, pb, T, tt, heads)
	}
	c.launch("causal_softmax_forward", blk(B*heads*T), blk(rowBlock), 0, pp, int32(T))
	for b := range B {
		vb := q + devPtr(b*T*ld+2*D)*4
		pb := pp + devPtr(int64(b*heads)*tt)*4
		ob := op + devPtr(b*T*D)*4
		// O_h = P_h·v_h: [T,T]·[T,hd].
		c.gemmBatched(false, false, T, hd, T, 1, pb, T, tt, vb, ld, int64(hd), 0, ob, D, int64(hd), heads)
	}
}

// AttentionBackward computes dqkv from dout through the saved probabilities:
// dV = Pᵀ·dO, dP = dO·Vᵀ, dS = P ⊙ (dP - Σ P·dP)/√hd (a kernel), dQ = dS·K,
// dK = dSᵀ·Q, each a batched GEMM over the heads of one sequence.
func (c *CUDA) AttentionBackward(dqkv, dout, qkv, probs *Tensor, heads int) {
	const op = "attention backward"
	if anyBF16(dqkv, dout, qkv, probs) {
		c.attentionBackwardBF16(dqkv, dout, qkv, probs, heads)
		return
	}
	B, T, D, hd := attnBackwardDims(dqkv, dout, qkv, probs, heads)
	if B*T == 0 {
		return
	}
	scale := float32(1 / math.Sqrt(float64(hd)))
	ld, tt := 3*D, int64(T)*int64(T)
	q, dq, pp, do := c.ptr(op, qkv), c.ptr(op, dqkv), c.ptr(op, probs), c.ptr(op, dout)
	dp := c.tmp(B * heads * T * T)
	for b := range B {
		vb := q + devPtr(b*T*ld+2*D)*4
		dob := do + devPtr(b*T*D)*4
		pb := pp + devPtr(int64(b*heads)*tt)*4
		dpb := dp.ptr + devPtr(int64(b*heads)*tt)*4
		dvb := dq + devPtr(b*T*ld+2*D)*4
		c.gemmBatched(true, false, T, hd, T, 1, pb, T, tt, dob, D, int64(hd), 0, dvb, ld, int64(hd), heads)
		c.gemmBatched(false, true, T, T, hd, 1, dob, D, int64(hd), vb, ld, int64(hd), 0, dpb, T, tt, heads)
	}
	c.launch("causal_softmax_backward", blk(B*heads*T), blk(rowBlock), 0, dp.ptr, pp, int32(T), scale)
	for b := range B {
		qb := q + devPtr(b*T*ld)*4
		kb := qb + devPtr(D)*4
		dpb := dp.ptr + devPtr(int64(b*heads)*tt)*4
		dqb := dq + devPtr(b*T*ld)*4
		dkb := dqb + devPtr(D)*4
		c.gemmBatched(false, false, T, hd, T, 1, dpb, T, tt, kb, ld, int64(hd), 0, dqb, ld, int64(hd), heads)
		c.gemmBatched(true, false, T, hd, T, 1, dpb, T, tt, qb, ld, int64(hd), 0, dkb, ld, int64(hd), heads)
	}
	c.alloc.put(dp)
}

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
