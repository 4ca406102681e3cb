package tensor

import "fmt"

// attnDims checks the attention shapes and returns B, T, D and the head width.
func attnDims(op string, qkv, out, probs *Tensor, heads int) (b, t, d, hd int) {
	b, t, d, hd = qkvDims(op, qkv, out, heads)
	mustShape(op, probs, b, heads, t, t)
	return b, t, d, hd
}

// qkvDims checks the shapes every attention shares, qkv [B,T,3D] and out
// (or dout) [B,T,D] with heads dividing D, and returns B, T, D and the head
// width.
func qkvDims(op string, qkv, out *Tensor, heads int) (b, t, d, hd int) {
	if len(qkv.Shape) != 3 || qkv.Shape[2]%3 != 0 {
		panic(fmt.Sprintf("%s: qkv shape %v, want [B,T,3D]", op, qkv.Shape))
	}
	b, t, d = qkv.Shape[0], qkv.Shape[1], qkv.Shape[2]/3
	if heads <= 0 || d%heads != 0 {
		panic(fmt.Sprintf("%s: width %d not divisible by %d heads", op, d, heads))
	}
	mustLen(op, "out", out, b*t*d)
	return b, t, d, d / heads
}

// flashDims checks the fused attention's shapes and returns B, T, D and the
// head width: qkv [B,T,3D], out (or dout) [B,T,D], lse [B,H,T] float32.
func flashDims(op string, qkv, out, lse *Tensor, heads int) (b, t, d, hd int) {
	b, t, d, hd = qkvDims(op, qkv, out, heads)
	mustShape(op, lse, b, heads, t)
	if lse.DType() != Float32 {
		panic(fmt.Sprintf("%s: lse is %v, want float32 (statistics stay float32)", op, lse.DType()))
	}
	return b, t, d, hd
}

// attnBackwardDims checks AttentionBackward's operands (attnDims, with dout
// in out's place, and dqkv like qkv) and returns B, T, D and the head width.
func attnBackwardDims(dqkv, dout, qkv, probs *Tensor, heads int) (b, t, d, hd int) {
	const op = "attention backward"
	b, t, d, hd = attnDims(op, qkv, dout, probs, heads)
	mustLen(op, "dqkv", dqkv, qkv.Len())
	return b, t, d, hd
}

// flashBackwardDims checks FlashAttentionBackward's operands (flashDims,
// with dout in out's place; out [B,T,D] and dqkv like qkv) and returns B,
// T, D and the head width.
func flashBackwardDims(dqkv, dout, qkv, out, lse *Tensor, heads int) (b, t, d, hd int) {
	const op = "flash attention backward"
	b, t, d, hd = flashDims(op, qkv, dout, lse, heads)
	mustLen(op, "out", out, b*t*d)
	mustLen(op, "dqkv", dqkv, qkv.Len())
	return b, t, d, hd
}
