package tensor

import "runtime"

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
	n, in, out := linearDims(y, x, w, bias, residual)
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
	n, in, out := linearBackwardInputDims(dx, dy, w)
	c.gemm(false, false, n, in, out, 1, dy.Data, out, w.Data, in, 0, dx.Data, in)
}

// LinearBackwardWeight computes dw = dyᵀ·x and dbias = Σ_rows dy.
func (c *CPU) LinearBackwardWeight(dw, dbias, dy, x *Tensor) {
	mustF32("linear backward weight", []string{"dw", "dbias"}, dw, dbias)
	if m := c.mix(dy, x); m != nil {
		defer m.done()
		dy, x = m.operands(dy, x)
	}
	n, in, out := linearBackwardWeightDims(dw, dbias, dy, x)
	c.gemm(true, false, out, in, n, 1, dy.Data, out, x.Data, in, 0, dw.Data, in)
	if dbias != nil {
		c.colSums(dbias.Data, dy.Data, n, out)
	}
}

// gemmBlock is the row (or column) block of C that one task computes, a
// function of the dimension alone: at least 512 (blocks of 128 rows ran 15-20%
// slower than one call on a 2048×768×256 product, 512 about 3%), and half the
// dimension when that is larger, so two threads always find two tasks and one
// thread loses little.
func gemmBlock(dim int) int {
	half := ((dim+1)/2 + 63) &^ 63
	return max(512, half)
}

// gemm computes C = alpha·op(A)·op(B) + beta·C. The Go kernels thread a product
// themselves (their bits do not depend on it). With OpenBLAS (held
// single-threaded) a large product is cut into fixed blocks of C rows, or of
// columns when C has few rows, which run in parallel; the cut depends only on
// the shape.
func (c *CPU) gemm(ta, tb bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, cc []float32, ldc int) {
	if m == 0 || n == 0 {
		return
	}
	if c.threaded != nil {
		c.threaded(runtime.GOMAXPROCS(0), ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, cc, ldc)
		return
	}
	if !c.chunky || int64(m)*int64(n)*int64(k) < 1<<20 {
		c.sgemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, cc, ldc)
		return
	}
	if blk := gemmBlock(m); m > blk {
		parallel((m+blk-1)/blk, func(i int) {
			r0 := i * blk
			r1 := min(m, r0+blk)
			ao := r0 * lda
			if ta {
				ao = r0
			}
			c.sgemm(ta, tb, r1-r0, n, k, alpha, a[ao:], lda, b, ldb, beta, cc[r0*ldc:], ldc)
		})
		return
	}
	if blk := gemmBlock(n); n > blk {
		parallel((n+blk-1)/blk, func(i int) {
			c0 := i * blk
			c1 := min(n, c0+blk)
			bo := c0
			if tb {
				bo = c0 * ldb
			}
			c.sgemm(ta, tb, m, c1-c0, k, alpha, a, lda, b[bo:], ldb, beta, cc[c0:], ldc)
		})
		return
	}
	c.sgemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, cc, ldc)
}
