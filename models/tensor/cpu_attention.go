package tensor

import "math"

// attnBlock is the block of query (or key) positions attention computes at a
// time, skipping the blocks above the causal diagonal: a quarter of the work
// at sequence 128.
const attnBlock = 64

// headViews returns where head h of sequence b starts in a [B,T,3D] buffer of
// q|k|v: its q, k and v columns, each row 3D values after the one before.
func headViews(buf []float32, b, h, T, D, hd int) (q, k, v []float32) {
	base := b*T*3*D + h*hd
	return buf[base:], buf[base+D:], buf[base+2*D:]
}

// Attention is causal multi-head self-attention; each (batch, head) pair is an
// independent task.
func (c *CPU) Attention(out, probs, qkv *Tensor, heads int) {
	if m := c.mix(out, probs, qkv); m != nil { // bfloat16: computed in float32 (cpu_bf16.go)
		defer m.done()
		qkv = m.in(qkv)
		out, probs = m.out(out), m.out(probs)
	}
	B, T, D, hd := attnDims("attention", qkv, out, probs, heads)
	scale := float32(1 / math.Sqrt(float64(hd)))
	ld := 3 * D
	parallel(B*heads, func(i int) {
		b, h := i/heads, i%heads
		q, k, v := headViews(qkv.Data, b, h, T, D, hd)
		p := probs.Data[i*T*T : (i+1)*T*T]
		// Causal: a block of query rows needs keys only up to its last row.
		for r0 := 0; r0 < T; r0 += attnBlock {
			r1 := min(T, r0+attnBlock)
			c.sgemm(false, true, r1-r0, r1, hd, scale, q[r0*ld:], ld, k, ld, 0, p[r0*T:], T)
		}
		for r := range T {
			row := p[r*T : (r+1)*T]
			mx := row[0]
			for _, s := range row[1 : r+1] {
				if s > mx { // not max(): its NaN handling costs a branch per element
					mx = s
				}
			}
			expShifted(row[:r+1], row[:r+1], mx)
			var sum float32
			for _, e := range row[:r+1] {
				sum += e
			}
			inv := 1 / sum
			for j := 0; j <= r; j++ {
				row[j] *= inv
			}
			clear(row[r+1:])
		}
		o := out.Data[b*T*D+h*hd:]
		for r0 := 0; r0 < T; r0 += attnBlock {
			r1 := min(T, r0+attnBlock)
			c.sgemm(false, false, r1-r0, hd, r1, 1, p[r0*T:], T, v, ld, 0, o[r0*D:], D)
		}
	})
}

// AttentionBackward computes dqkv from dout through the saved probabilities.
func (c *CPU) AttentionBackward(dqkv, dout, qkv, probs *Tensor, heads int) {
	if m := c.mix(dqkv, dout, qkv, probs); m != nil { // bfloat16: computed in float32 (cpu_bf16.go)
		defer m.done()
		dout, qkv, probs = m.in(dout), m.in(qkv), m.in(probs)
		dqkv = m.out(dqkv)
	}
	B, T, D, hd := attnBackwardDims(dqkv, dout, qkv, probs, heads)
	scale := float32(1 / math.Sqrt(float64(hd)))
	ld := 3 * D
	parallel(B*heads, func(i int) {
		b, h := i/heads, i%heads
		q, k, v := headViews(qkv.Data, b, h, T, D, hd)
		dq, dk, dv := headViews(dqkv.Data, b, h, T, D, hd)
		do := dout.Data[b*T*D+h*hd:]
		p := probs.Data[i*T*T : (i+1)*T*T]
		dp := c.scratch(T * T)
		defer c.release(dp)
		// dV = Pᵀ·dO and dK = dSᵀ·Q by blocks of keys (rows above a key's
		// position have P = dS = 0); dP = dO·Vᵀ and dQ = dS·K by blocks of
		// queries (keys past the block's last row are 0).
		for c0 := 0; c0 < T; c0 += attnBlock {
			c1 := min(T, c0+attnBlock)
			c.sgemm(true, false, c1-c0, hd, T-c0, 1, p[c0*T+c0:], T, do[c0*D:], D, 0, dv[c0*ld:], ld)
		}
		for r0 := 0; r0 < T; r0 += attnBlock {
			r1 := min(T, r0+attnBlock)
			c.sgemm(false, true, r1-r0, r1, hd, 1, do[r0*D:], D, v, ld, 0, dp[r0*T:], T)
		}
		// dS = P ⊙ (dP - Σ_j dP·P), times the 1/√hd scale.
		for r := range T {
			pr, dr := p[r*T:(r+1)*T], dp[r*T:(r+1)*T]
			var s float32
			for j := 0; j <= r; j++ {
				s += pr[j] * dr[j]
			}
			for j := 0; j <= r; j++ {
				dr[j] = pr[j] * (dr[j] - s) * scale
			}
			clear(dr[r+1:])
		}
		for r0 := 0; r0 < T; r0 += attnBlock {
			r1 := min(T, r0+attnBlock)
			c.sgemm(false, false, r1-r0, hd, r1, 1, dp[r0*T:], T, k, ld, 0, dq[r0*ld:], ld)
		}
		for c0 := 0; c0 < T; c0 += attnBlock {
			c1 := min(T, c0+attnBlock)
			c.sgemm(true, false, c1-c0, hd, T-c0, 1, dp[c0*T+c0:], T, q[c0*ld:], ld, 0, dk[c0*ld:], ld)
		}
	})
}
