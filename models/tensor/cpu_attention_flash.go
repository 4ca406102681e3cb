package tensor

import "math"

// flashBlock is the CPU's tile of query and key positions in the fused
// attention: 64×64 scores (16 KiB) stay in the L1 and L2 caches with the
// tiles of q, k, v and the output they come from.
const flashBlock = 64

// flashScratchHook, where set (by tests), sees the length of every scratch
// buffer the CPU's fused attention takes, to prove its memory is O(T).
var flashScratchHook func(n int)

func (c *CPU) flashScratch(n int) []float32 {
	if flashScratchHook != nil {
		flashScratchHook(n)
	}
	return c.scratch(n)
}

// gatherRows copies rows [r0,r1) of hd columns starting at column col of a
// row-major tensor with ld columns into dst, as float32.
func gatherRows(dst []float32, t *Tensor, col, ld, r0, r1, hd int) {
	for r := r0; r < r1; r++ {
		d := dst[(r-r0)*hd : (r-r0+1)*hd]
		o := r*ld + col
		if t.DType() == BFloat16 {
			UnpackBF16(d, t.Half[o:o+hd])
		} else {
			copy(d, t.Data[o:o+hd])
		}
	}
}

// scatterRows writes src (rows×hd, float32) into rows [r0, r0+rows) of t at
// column col, rounded once to t's dtype.
func scatterRows(t *Tensor, col, ld, r0, rows, hd int, src []float32) {
	for r := range rows {
		s := src[r*hd : (r+1)*hd]
		o := (r0+r)*ld + col
		if t.DType() == BFloat16 {
			PackBF16(t.Half[o:o+hd], s)
		} else {
			copy(t.Data[o:o+hd], s)
		}
	}
}

// FlashAttention is the fused causal attention: per (sequence, head, block
// of 64 queries), an independent task walks the key blocks up to the
// diagonal with an online softmax, so no T×T matrix exists; lse keeps each
// row's log Σ exp of the scaled scores.
func (c *CPU) FlashAttention(out, lse, qkv *Tensor, heads int) {
	B, T, D, hd := flashDims("flash attention", qkv, out, lse, heads)
	nq := (T + flashBlock - 1) / flashBlock
	parallel(B*heads*nq, func(i int) {
		bh, qb := i/nq, i%nq
		c.flashForwardBlock(out, lse, qkv, bh/heads, bh%heads, qb*flashBlock, T, D, hd)
	})
}

// flashForwardBlock computes query rows [r0, r0+64) of head h of sequence b.
func (c *CPU) flashForwardBlock(out, lse, qkv *Tensor, b, h, r0, T, D, hd int) {
	r1 := min(T, r0+flashBlock)
	nr := r1 - r0
	scale := float32(1 / math.Sqrt(float64(hd)))
	buf := c.flashScratch((3*flashBlock+nr)*hd + nr*flashBlock + 2*nr)
	defer c.release(buf)
	take := carver(buf)
	qs, ks, vs, o := take(nr*hd), take(flashBlock*hd), take(flashBlock*hd), take(nr*hd)
	s, m, l := take(nr*flashBlock), take(nr), take(nr)
	ld, base := 3*D, b*T*3*D
	view := qkv.View(base, T, ld) // this sequence's rows
	gatherRows(qs, view, h*hd, ld, r0, r1, hd)
	clear(o)
	for r := range nr {
		m[r], l[r] = float32(math.Inf(-1)), 0
	}
	for c0 := 0; c0 < r1; c0 += flashBlock {
		c1 := min(r1, c0+flashBlock)
		nc := c1 - c0
		gatherRows(ks, view, D+h*hd, ld, c0, c1, hd)
		gatherRows(vs, view, 2*D+h*hd, ld, c0, c1, hd)
		c.sgemm(false, true, nr, nc, hd, scale, qs, hd, ks, hd, 0, s, nc)
		for r := range nr {
			onlineSoftmaxRow(s[r*nc:(r+1)*nc], min(nc, r0+r+1-c0), &m[r], &l[r], o[r*hd:(r+1)*hd])
		}
		c.sgemm(false, false, nr, hd, nc, 1, s, nc, vs, hd, 1, o, hd)
	}
	for r := range nr {
		inv := 1 / l[r]
		for j := range hd {
			o[r*hd+j] *= inv
		}
		lse.Data[(b*(D/hd)+h)*T+r0+r] = m[r] + float32(math.Log(float64(l[r])))
	}
	scatterRows(out.View(b*T*D, T, D), h*hd, D, r0, nr, hd, o)
}

// onlineSoftmaxRow folds one row of a score block into the running max m and
// sum l: the first valid scores become exp(s - m'), the rest 0, and the
// output row accumulated so far is rescaled by exp(m - m').
func onlineSoftmaxRow(s []float32, valid int, m, l *float32, o []float32) {
	if valid <= 0 {
		clear(s)
		return
	}
	mx := *m
	for _, v := range s[:valid] {
		if v > mx {
			mx = v
		}
	}
	expShifted(s[:valid], s[:valid], mx)
	clear(s[valid:])
	var sum float32
	for _, e := range s[:valid] {
		sum += e
	}
	if mx != *m {
		alpha := exp32(*m - mx) // 0 for the first block (m = -inf)
		for j := range o {
			o[j] *= alpha
		}
		*l *= alpha
	}
	*l += sum
	*m = mx
}

// carver hands out consecutive pieces of buf.
func carver(buf []float32) func(n int) []float32 {
	return func(n int) []float32 {
		p := buf[:n:n]
		buf = buf[n:]
		return p
	}
}

// cpuFusedMinSeq is the shortest sequence at which the CPU's fused attention
// measured faster than the unfused one (forward and backward, OpenBLAS, 2
// threads): 1.1-2.6× slower at T=64 and 128, where the T×T probabilities fit
// the caches and the fused backward's second score product shows; 0.5-1.3× at
// 256, 0.2-0.8× at 512, 0.7-1.0× at 1024 (docs/models.md, "Attention").
const cpuFusedMinSeq = 256

// FusedAttention: on the CPU the fused attention from cpuFusedMinSeq on.
func (c *CPU) FusedAttention(_, seq int) bool { return seq >= cpuFusedMinSeq }

// FlashAttentionBackward computes dqkv from dout by recomputing the
// probabilities tile by tile from q, k and lse. Each (sequence, head) is an
// independent task that walks the key blocks in order and, for each, the
// query blocks on and below the diagonal in order: dK and dV of a key block,
// and dQ of every query block, are summed in that fixed order. It holds
// O(T·hd) floats, never a T×T matrix.
func (c *CPU) FlashAttentionBackward(dqkv, dout, qkv, out, lse *Tensor, heads int) {
	B, T, D, hd := flashBackwardDims(dqkv, dout, qkv, out, lse, heads)
	parallel(B*heads, func(i int) {
		c.flashBackwardHead(dqkv, dout, qkv, out, lse, i/heads, i%heads, T, D, hd)
	})
}

// flashHead is one head's operands gathered as contiguous float32 [T×hd].
type flashHead struct {
	q, k, v, do, dq, rowDot []float32
}

func (c *CPU) gatherHead(buf []float32, dout, qkv, out *Tensor, b, h, T, D, hd int) flashHead {
	take := carver(buf)
	f := flashHead{q: take(T * hd), k: take(T * hd), v: take(T * hd), do: take(T * hd), dq: take(T * hd), rowDot: take(T)}
	ld := 3 * D
	view := qkv.View(b*T*ld, T, ld)
	gatherRows(f.q, view, h*hd, ld, 0, T, hd)
	gatherRows(f.k, view, D+h*hd, ld, 0, T, hd)
	gatherRows(f.v, view, 2*D+h*hd, ld, 0, T, hd)
	gatherRows(f.do, dout.View(b*T*D, T, D), h*hd, D, 0, T, hd)
	// D_i = Σ dO_i·O_i, with O read a row at a time through dq (zeroed after).
	ov := out.View(b*T*D, T, D)
	for r := range T {
		o := f.dq[:hd]
		gatherRows(o, ov, h*hd, D, r, r+1, hd)
		var s float32
		for j, x := range o {
			s += x * f.do[r*hd+j]
		}
		f.rowDot[r] = s
	}
	clear(f.dq)
	return f
}

func (c *CPU) flashBackwardHead(dqkv, dout, qkv, out, lse *Tensor, b, h, T, D, hd int) {
	const bk = flashBlock
	buf := c.flashScratch(5*T*hd + T + 2*bk*hd + 2*bk*bk)
	defer c.release(buf)
	f := c.gatherHead(buf, dout, qkv, out, b, h, T, D, hd)
	take := carver(buf[5*T*hd+T:])
	dk, dv, s, dp := take(bk*hd), take(bk*hd), take(bk*bk), take(bk*bk)
	rowLSE := lse.Data[(b*(D/hd)+h)*T:][:T]
	scale := float32(1 / math.Sqrt(float64(hd)))
	ld := 3 * D
	dview := dqkv.View(b*T*ld, T, ld)
	for c0 := 0; c0 < T; c0 += bk {
		nc := min(T, c0+bk) - c0
		clear(dk[:nc*hd])
		clear(dv[:nc*hd])
		for r0 := c0; r0 < T; r0 += bk { // query blocks on and below the diagonal
			nr := min(T, r0+bk) - r0
			qi, doi := f.q[r0*hd:], f.do[r0*hd:]
			c.sgemm(false, true, nr, nc, hd, scale, qi, hd, f.k[c0*hd:], hd, 0, s, nc)
			c.sgemm(false, true, nr, nc, hd, 1, doi, hd, f.v[c0*hd:], hd, 0, dp, nc)
			for r := range nr {
				valid := min(nc, r0+r+1-c0)
				pr, dr := s[r*nc:(r+1)*nc], dp[r*nc:(r+1)*nc]
				expShifted(pr[:valid], pr[:valid], rowLSE[r0+r])
				clear(pr[valid:])
				di := f.rowDot[r0+r]
				for j := range valid {
					dr[j] = pr[j] * (dr[j] - di) * scale
				}
				clear(dr[valid:])
			}
			c.sgemm(true, false, nc, hd, nr, 1, s, nc, doi, hd, 1, dv, hd)
			c.sgemm(true, false, nc, hd, nr, 1, dp, nc, qi, hd, 1, dk, hd)
			c.sgemm(false, false, nr, hd, nc, 1, dp, nc, f.k[c0*hd:], hd, 1, f.dq[r0*hd:], hd)
		}
		scatterRows(dview, D+h*hd, ld, c0, nc, hd, dk)
		scatterRows(dview, 2*D+h*hd, ld, c0, nc, hd, dv)
	}
	scatterRows(dview, h*hd, ld, 0, T, hd, f.dq)
}
