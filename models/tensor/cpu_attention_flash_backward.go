package tensor

import "math"

// FlashAttentionBackward computes dqkv from dout by recomputing the
// probabilities tile by tile from q, k and lse. Each (sequence, head) is an
// independent task that walks the key blocks in order and, for each, the
// query blocks on and below the diagonal in order: dK and dV of a key block,
// and dQ of every query block, are summed in that fixed order. It holds
// O(T·hd) floats, never a T×T matrix.
func (c *CPU) FlashAttentionBackward(dqkv, dout, qkv, out, lse *Tensor, heads int) {
	const op = "flash attention backward"
	B, T, D, hd := flashDims(op, qkv, dout, lse, heads)
	mustLen(op, "out", out, B*T*D)
	mustLen(op, "dqkv", dqkv, qkv.Len())
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
