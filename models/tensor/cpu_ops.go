package tensor

import (
	"fmt"
	"math"
	"slices"
)

// rowGrain is the fixed number of rows one task handles in row-wise operations.
const rowGrain = 64

// colGrain is the fixed number of columns one task sums over all rows in
// column reductions (bias and LayerNorm weight gradients): each column is summed
// in row order by exactly one task. Wide blocks keep the inner loops long.
const colGrain = 256

// MatMul computes c = alpha·op(a)·op(b) + beta·c.
func (c *CPU) MatMul(cc, a *Tensor, ta bool, b *Tensor, tb bool, alpha, beta float32) {
	if m := c.mix(cc, a, b); m != nil {
		defer m.done()
		a, b = m.operands(a, b)
		if beta != 0 {
			cc = m.inout(cc)
		} else {
			cc = m.out(cc)
		}
	}
	m, n, k, lda, ldb := matMulDims(cc, a, ta, b, tb)
	c.gemm(ta, tb, m, n, k, alpha, a.Data, lda, b.Data, ldb, beta, cc.Data, n)
}

// Linear computes y = x·wᵀ + bias (+ residual).
func (c *CPU) Linear(y, x, w, bias, residual *Tensor) {
	if m := c.mix(y, x, w, bias, residual); m != nil {
		defer m.done()
		x, w = m.operands(x, w)
		y, bias, residual = m.out(y), m.in(bias), m.in(residual)
	}
	n, in := x.Rows()
	out, _ := matDims("linear", "w", w)
	mustShape("linear weight", w, out, in)
	mustLen("linear", "y", y, n*out)
	if bias != nil {
		mustLen("linear", "bias", bias, out)
	}
	if residual != nil {
		mustLen("linear", "residual", residual, n*out)
	}
	// y starts as residual + bias (either may be missing); the product adds onto it.
	beta := float32(0)
	if bias != nil || residual != nil {
		parallelRange(n, rowGrain, func(lo, hi int) {
			for r := lo; r < hi; r++ {
				yr := y.Data[r*out : (r+1)*out]
				switch {
				case residual == nil:
					copy(yr, bias.Data)
				case bias == nil:
					copy(yr, residual.Data[r*out:(r+1)*out])
				default:
					rr := residual.Data[r*out : (r+1)*out]
					for j, b := range bias.Data {
						yr[j] = rr[j] + b
					}
				}
			}
		})
		beta = 1
	}
	c.gemm(false, true, n, out, in, 1, x.Data, in, w.Data, in, beta, y.Data, out)
}

// LinearBackwardInput computes dx = dy·w.
func (c *CPU) LinearBackwardInput(dx, dy, w *Tensor) {
	if m := c.mix(dx, dy, w); m != nil {
		defer m.done()
		dy, w = m.operands(dy, w)
		dx = m.out(dx)
	}
	out, in := matDims("linear backward input", "w", w)
	n := dy.Len() / out
	mustLen("linear backward input", "dy", dy, n*out)
	mustLen("linear backward input", "dx", dx, n*in)
	c.gemm(false, false, n, in, out, 1, dy.Data, out, w.Data, in, 0, dx.Data, in)
}

// LinearBackwardWeight computes dw = dyᵀ·x and dbias = Σ_rows dy.
func (c *CPU) LinearBackwardWeight(dw, dbias, dy, x *Tensor) {
	mustF32("linear backward weight", []string{"dw", "dbias"}, dw, dbias)
	if m := c.mix(dy, x); m != nil {
		defer m.done()
		dy, x = m.operands(dy, x)
	}
	out, in := matDims("linear backward weight", "dw", dw)
	n := x.Len() / in
	mustLen("linear backward weight", "dy", dy, n*out)
	mustLen("linear backward weight", "x", x, n*in)
	c.gemm(true, false, out, in, n, 1, dy.Data, out, x.Data, in, 0, dw.Data, in)
	if dbias != nil {
		mustLen("linear backward weight", "dbias", dbias, out)
		c.colSums(dbias.Data, dy.Data, n, out)
	}
}

// colSums sets s[j] = Σ_r m[r,j] as the product mᵀ·1, which the BLAS does with
// vector instructions; the blocks of the product depend on the shape only.
func (c *CPU) colSums(s, m []float32, rows, cols int) {
	ones := c.scratch(rows)
	for i := range ones {
		ones[i] = 1
	}
	c.gemm(true, false, cols, 1, rows, 1, m, cols, ones, 1, 0, s, 1)
	c.release(ones)
}

// scratch returns a buffer of n floats (contents undefined) from a pool.
func (c *CPU) scratch(n int) []float32 {
	if p, ok := c.pool.Get().(*[]float32); ok && cap(*p) >= n {
		return (*p)[:n]
	}
	return make([]float32, n)
}

// release returns a scratch buffer to the pool.
func (c *CPU) release(b []float32) { c.pool.Put(&b) }

// lnDims returns x's rows and width, checking the per-row statistics against them.
func lnDims(op string, x, mean, rstd *Tensor) (n, d int) {
	n, d = x.Rows()
	mustLen(op, "mean", mean, n)
	mustLen(op, "rstd", rstd, n)
	return n, d
}

// LayerNorm normalises each row of x.
func (c *CPU) LayerNorm(y, mean, rstd, x, gamma, beta *Tensor, eps float32) {
	mustF32("layernorm", []string{"mean", "rstd"}, mean, rstd)
	if m := c.mix(y, x, gamma, beta); m != nil {
		defer m.done()
		y, x, gamma, beta = m.out(y), m.in(x), m.in(gamma), m.in(beta)
	}
	n, d := lnDims("layernorm", x, mean, rstd)
	mustLen("layernorm", "y", y, n*d)
	mustLen("layernorm", "gamma", gamma, d)
	mustLen("layernorm", "beta", beta, d)
	parallelRange(n, rowGrain, func(lo, hi int) {
		for r := lo; r < hi; r++ {
			xr := x.Data[r*d : (r+1)*d]
			m := sum4(xr, 0) / float32(d)
			v := sumSq4(xr, m) / float32(d)
			rs := float32(1 / math.Sqrt(float64(v+eps)))
			mean.Data[r], rstd.Data[r] = m, rs
			yr := y.Data[r*d : (r+1)*d]
			g, b := gamma.Data[:len(xr)], beta.Data[:len(xr)]
			for j, xv := range xr {
				yr[j] = (xv-m)*rs*g[j] + b[j]
			}
		}
	})
}

// sum4 is Σ x - shift with four running sums (a fixed order, and four times the
// throughput of one dependent chain).
func sum4(x []float32, shift float32) float32 {
	var s0, s1, s2, s3 float32
	j := 0
	for ; j+4 <= len(x); j += 4 {
		s0 += x[j] - shift
		s1 += x[j+1] - shift
		s2 += x[j+2] - shift
		s3 += x[j+3] - shift
	}
	for ; j < len(x); j++ {
		s0 += x[j] - shift
	}
	return (s0 + s1) + (s2 + s3)
}

// sumSq4 is Σ (x - m)² with four running sums.
func sumSq4(x []float32, m float32) float32 {
	var s0, s1, s2, s3 float32
	j := 0
	for ; j+4 <= len(x); j += 4 {
		a, b, c, d := x[j]-m, x[j+1]-m, x[j+2]-m, x[j+3]-m
		s0 += a * a
		s1 += b * b
		s2 += c * c
		s3 += d * d
	}
	for ; j < len(x); j++ {
		a := x[j] - m
		s0 += a * a
	}
	return (s0 + s1) + (s2 + s3)
}

// LayerNormBackwardInput computes dx = rstd·(g·dy - mean(g·dy) - x̂·mean(g·dy·x̂)).
func (c *CPU) LayerNormBackwardInput(dx, dy, x, mean, rstd, gamma *Tensor) {
	mustF32("layernorm backward", []string{"mean", "rstd"}, mean, rstd)
	if m := c.mix(dx, dy, x, gamma); m != nil {
		defer m.done()
		dx, dy, x, gamma = m.out(dx), m.in(dy), m.in(x), m.in(gamma)
	}
	n, d := lnDims("layernorm backward", x, mean, rstd)
	mustLen("layernorm backward", "dy", dy, n*d)
	mustLen("layernorm backward", "dx", dx, n*d)
	mustLen("layernorm backward", "gamma", gamma, d)
	parallelRange(n, rowGrain, func(lo, hi int) {
		for r := lo; r < hi; r++ {
			xr, dyr := x.Data[r*d:(r+1)*d], dy.Data[r*d:(r+1)*d]
			m, rs := mean.Data[r], rstd.Data[r]
			g := gamma.Data[:len(dyr)]
			var a0, a1, b0, b1 float32
			j := 0
			for ; j+2 <= len(dyr); j += 2 {
				g0, g1 := dyr[j]*g[j], dyr[j+1]*g[j+1]
				a0 += g0
				a1 += g1
				b0 += g0 * (xr[j] - m)
				b1 += g1 * (xr[j+1] - m)
			}
			for ; j < len(dyr); j++ {
				g0 := dyr[j] * g[j]
				a0 += g0
				b0 += g0 * (xr[j] - m)
			}
			a, b := (a0+a1)/float32(d), (b0+b1)*rs/float32(d)
			dxr := dx.Data[r*d : (r+1)*d]
			for j, v := range dyr {
				xh := (xr[j] - m) * rs
				dxr[j] = rs * (v*g[j] - a - xh*b)
			}
		}
	})
}

// LayerNormBackwardWeight computes dgamma = Σ_rows dy·x̂ and dbeta = Σ_rows dy.
func (c *CPU) LayerNormBackwardWeight(dgamma, dbeta, dy, x, mean, rstd *Tensor) {
	mustF32("layernorm backward weight", []string{"dgamma", "dbeta", "mean", "rstd"}, dgamma, dbeta, mean, rstd)
	if m := c.mix(dy, x); m != nil {
		defer m.done()
		dy, x = m.in(dy), m.in(x)
	}
	n, d := lnDims("layernorm backward weight", x, mean, rstd)
	mustLen("layernorm backward weight", "dy", dy, n*d)
	mustLen("layernorm backward weight", "dgamma", dgamma, d)
	mustLen("layernorm backward weight", "dbeta", dbeta, d)
	// dgamma = Σ_rows dy·x̂: form dy·x̂ row by row, then sum columns like dbeta.
	prod := c.scratch(n * d)
	parallelRange(n, rowGrain, func(lo, hi int) {
		for r := lo; r < hi; r++ {
			m, rs := mean.Data[r], rstd.Data[r]
			xr, dyr, pr := x.Data[r*d:(r+1)*d], dy.Data[r*d:(r+1)*d], prod[r*d:(r+1)*d]
			for j, v := range dyr {
				pr[j] = v * ((xr[j] - m) * rs)
			}
		}
	})
	c.colSums(dgamma.Data, prod, n, d)
	c.colSums(dbeta.Data, dy.Data, n, d)
	c.release(prod)
}

// embedDims checks an embedding's operands: the token table [V,D]; the
// activations, one row of D per token ([B,T,D], or [N,D] for one sequence); the
// position table (may be nil), at least [T,D]; tokens within the vocabulary.
// It returns D and T.
func embedDims(op string, table, pos, act *Tensor, tokens []int32) (D, T int) {
	V, D := matDims(op, "token table", table)
	mustLen(op, "activations", act, len(tokens)*D)
	T = len(tokens)
	if len(act.Shape) == 3 {
		T = act.Shape[1]
	}
	if pos != nil {
		if P, pd := matDims(op, "position table", pos); pd != D || P < T {
			panic(fmt.Sprintf("%s: position table %v, want at least [%d %d]", op, pos.Shape, T, D))
		}
	}
	checkIDs(op, "token", tokens, V)
	return D, T
}

// checkIDs panics unless every id is within a vocabulary of V.
func checkIDs(op, what string, ids []int32, V int) {
	if i := slices.IndexFunc(ids, func(t int32) bool { return t < 0 || int(t) >= V }); i >= 0 {
		panic(fmt.Sprintf("%s: %s %d at %d outside vocabulary of %d", op, what, ids[i], i, V))
	}
}

// Embed computes y[b,t] = wte[token] + wpe[t].
func (c *CPU) Embed(y, wte, wpe *Tensor, tokens []int32) {
	if m := c.mix(y, wte, wpe); m != nil {
		defer m.done()
		y, wte, wpe = m.out(y), m.in(wte), m.in(wpe)
	}
	D, T := embedDims("embed", wte, wpe, y, tokens)
	n := len(tokens)
	parallelRange(n, rowGrain, func(lo, hi int) {
		for r := lo; r < hi; r++ {
			tok := int(tokens[r])
			yr := y.Data[r*D : (r+1)*D]
			copy(yr, wte.Data[tok*D:(tok+1)*D])
			if wpe != nil {
				pos := wpe.Data[(r%T)*D : (r%T+1)*D]
				for j, v := range pos {
					yr[j] += v
				}
			}
		}
	})
}

// EmbedBackward scatter-adds dy into dwte and sums it per position into dwpe.
// Tasks own column blocks, and rows are added in order within each.
func (c *CPU) EmbedBackward(dwte, dwpe, dy *Tensor, tokens []int32) {
	mustF32("embed backward", []string{"dwte", "dwpe"}, dwte, dwpe)
	if m := c.mix(dy); m != nil {
		defer m.done()
		dy = m.in(dy)
	}
	D, T := embedDims("embed backward", dwte, dwpe, dy, tokens)
	clear(dwte.Data)
	if dwpe != nil {
		clear(dwpe.Data)
	}
	parallelRange(D, colGrain, func(lo, hi int) {
		for r, tok := range tokens {
			g := dy.Data[r*D+lo : r*D+hi]
			dst := dwte.Data[int(tok)*D+lo : int(tok)*D+hi]
			for j, v := range g {
				dst[j] += v
			}
			if dwpe != nil {
				pos := dwpe.Data[(r%T)*D+lo : (r%T)*D+hi]
				for j, v := range g {
					pos[j] += v
				}
			}
		}
	})
}

// CrossEntropy computes the softmax of each row over its first valid columns
// (0: all) and the mean negative log-likelihood; the padding columns get
// probability 0, as if their logits were -inf.
func (c *CPU) CrossEntropy(probs, logits *Tensor, targets []int32, valid int) float64 {
	if m := c.mix(probs, logits); m != nil {
		defer m.done()
		logits = m.in(logits)
		probs = m.out(probs)
	}
	n, V := logits.Rows()
	if len(targets) != n {
		panic(fmt.Sprintf("cross entropy: %d targets for %d rows", len(targets), n))
	}
	mustLen("cross entropy", "probs", probs, n*V)
	valid = validCols("cross entropy", valid, V)
	checkIDs("cross entropy", "target", targets, valid)
	losses := make([]float64, n)
	parallelRange(n, rowGrain, func(lo, hi int) {
		for r := lo; r < hi; r++ {
			lr, pr := logits.Data[r*V:r*V+valid], probs.Data[r*V:(r+1)*V]
			tg := int(targets[r])
			mx := lr[0]
			for _, v := range lr {
				if v > mx {
					mx = v
				}
			}
			zt := lr[tg] - mx
			// The denominator in float64, in column order: added in float32,
			// 50257 terms lose about 1e-6 of the loss.
			expShifted(pr[:valid], lr, mx)
			var sum float64
			for _, e := range pr[:valid] {
				sum += float64(e)
			}
			inv := float32(1 / sum)
			for j := range pr[:valid] {
				pr[j] *= inv
			}
			clear(pr[valid:])
			losses[r] = math.Log(sum) - float64(zt)
		}
	})
	var total float64
	for _, l := range losses {
		total += l
	}
	return total / float64(n)
}

// validCols checks the vocabulary columns of a V-column row: 0 means all.
func validCols(op string, valid, V int) int {
	if valid == 0 {
		return V
	}
	if valid < 0 || valid > V {
		panic(fmt.Sprintf("%s: %d vocabulary columns of %d", op, valid, V))
	}
	return valid
}

// CrossEntropyBackward computes dlogits = scale·(p - onehot)/N.
func (c *CPU) CrossEntropyBackward(dlogits, probs *Tensor, targets []int32, scale float32) {
	if m := c.mix(dlogits, probs); m != nil {
		defer m.done()
		probs = m.in(probs)
		dlogits = m.out(dlogits)
	}
	n, V := probs.Rows()
	mustLen("cross entropy backward", "dlogits", dlogits, n*V)
	if len(targets) != n {
		panic(fmt.Sprintf("cross entropy backward: %d targets for %d rows", len(targets), n))
	}
	checkIDs("cross entropy backward", "target", targets, V)
	s := scale / float32(n)
	parallelRange(n, rowGrain, func(lo, hi int) {
		for r := lo; r < hi; r++ {
			pr, dr := probs.Data[r*V:(r+1)*V], dlogits.Data[r*V:(r+1)*V]
			for j, p := range pr {
				dr[j] = p * s
			}
			dr[targets[r]] -= s
		}
	})
}

// Add computes y = a + b.
func (c *CPU) Add(y, a, b *Tensor) {
	if m := c.mix(y, a, b); m != nil {
		defer m.done()
		a, b = m.in(a), m.in(b)
		y = m.out(y)
	}
	mustLen("add", "a", a, y.Len())
	mustLen("add", "b", b, y.Len())
	parallelRange(y.Len(), 1<<14, func(lo, hi int) {
		ys, as, bs := y.Data[lo:hi], a.Data[lo:hi], b.Data[lo:hi]
		for i := range ys {
			ys[i] = as[i] + bs[i]
		}
	})
}
