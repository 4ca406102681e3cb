package tensor

import (
	"fmt"
	"math"
)

// The CUDA fused attention's head widths: below 32 a tile's rows are mostly
// idle threads, above 128 the tiles and per-thread accumulators no longer fit
// the 48 KiB of static shared memory and the registers.
const (
	FlashMinHead = 32
	FlashMaxHead = 128
)

// Tiles and threads of kernels/attention_flash.cu (FA_BR, FB_T, FA_THREADS).
const (
	flashFwdRows  = 32
	flashBwdRows  = 16
	flashThreads  = 128
	flashDotWarps = flashThreads / 32
)

// flashGrid is the grid of a fused-attention kernel: x over blocks of rows
// of T, y over the B·heads (sequence, head) pairs, which CUDA caps at 65535.
func flashGrid(op string, T, rows, bh int) [3]uint32 {
	if bh > 65535 {
		panic(fmt.Sprintf("%s: %d sequences × heads, above the 65535 one launch takes: give fewer sequences per micro-batch", op, bh))
	}
	return [3]uint32{uint32((T + rows - 1) / rows), uint32(bh), 1}
}

// flashHeadErr says why a head width is outside what the CUDA fused
// attention takes, or nil.
func flashHeadErr(hd int) error {
	if hd < FlashMinHead || hd > FlashMaxHead {
		return fmt.Errorf("head width %d (width/heads) is outside %d..%d, what the CUDA fused attention takes: "+
			"choose --heads so that width/heads is in range, or use the unfused Attention", hd, FlashMinHead, FlashMaxHead)
	}
	return nil
}

func bf16Flag(t *Tensor) int32 {
	if t.DType() == BFloat16 {
		return 1
	}
	return 0
}

// FlashAttention is the fused causal attention: one kernel, a block per 32
// queries of one head, online softmax over key tiles up to the diagonal in
// shared memory; out gets the attention, lse [B,H,T] each row's log Σ exp.
func (c *CUDA) FlashAttention(out, lse, qkv *Tensor, heads int) {
	const op = "flash attention"
	B, T, _, hd := flashDims(op, qkv, out, lse, heads)
	if err := flashHeadErr(hd); err != nil {
		panic(fmt.Sprintf("%s: %v", op, err))
	}
	if B*T == 0 {
		return
	}
	scale := float32(1 / math.Sqrt(float64(hd)))
	grid := flashGrid(op, T, flashFwdRows, B*heads)
	c.launch("flash_attention_forward", grid, blk(flashThreads), 0, c.ptrAny(op, out), c.ptr(op, lse), c.ptrAny(op, qkv),
		int32(T), int32(heads), int32(hd), scale, bf16Flag(qkv), bf16Flag(out))
}

// FlashAttentionBackward computes dqkv from dout in three kernels and no
// atomics: the row dots D = Σ dout·out, then dK and dV per key block (query
// blocks in order) and dQ per query block (key blocks in order), each
// recomputing the probabilities from lse. Its only scratch is D, [B,H,T].
func (c *CUDA) FlashAttentionBackward(dqkv, dout, qkv, out, lse *Tensor, heads int) {
	const op = "flash attention backward"
	B, T, _, hd := flashBackwardDims(dqkv, dout, qkv, out, lse, heads)
	if err := flashHeadErr(hd); err != nil {
		panic(fmt.Sprintf("%s: %v", op, err))
	}
	if B*T == 0 {
		return
	}
	scale := float32(1 / math.Sqrt(float64(hd)))
	rows := B * heads * T
	dd := c.tmp(rows)
	pd, po, pq, pl, pg := c.ptrAny(op, dout), c.ptrAny(op, out), c.ptrAny(op, qkv), c.ptr(op, lse), c.ptrAny(op, dqkv)
	c.launch("flash_attention_rowdot", blk((rows+flashDotWarps-1)/flashDotWarps), blk(flashThreads), 0,
		dd.ptr, pd, po, int32(T), int32(heads), int32(hd), int64(rows), bf16Flag(dout), bf16Flag(out))
	grid := flashGrid(op, T, flashBwdRows, B*heads)
	args := []any{pg, pq, pd, pl, dd.ptr, int32(T), int32(heads), int32(hd), scale, bf16Flag(qkv), bf16Flag(dout), bf16Flag(dqkv)}
	c.launch("flash_attention_backward_dkv", grid, blk(flashThreads), 0, args...)
	c.launch("flash_attention_backward_dq", grid, blk(flashThreads), 0, args...)
	c.alloc.put(dd)
}

// FusedAttention: on the GPU the fused kernel wherever it takes the width
// (it never writes the B·H·T·T probabilities the unfused path does).
func (c *CUDA) FusedAttention(headDim, _ int) bool { return flashHeadErr(headDim) == nil }
