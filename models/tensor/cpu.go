package tensor

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
)

// CPU is the reference backend. It parallelises over GOMAXPROCS but splits work
// only into chunks whose boundaries depend on the shapes alone, and never splits
// a sum, so its results are bit-identical whatever the thread count.
type CPU struct {
	name   string
	sgemm  func(ta, tb bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int)
	chunky bool // split large products into fixed row blocks and run them in parallel
	// threaded, where set, computes a whole product on up to GOMAXPROCS
	// goroutines itself (the Go kernels, which share nothing between blocks
	// that changes bits); gemm calls it instead of cutting.
	threaded func(workers int, ta, tb bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int)
	pool     sync.Pool
	hint     string // a line for the start about OpenBLAS: what it would gain, or which core pplaunch chose
}

// Name says which library runs the matrix products.
func (c *CPU) Name() string { return c.name }

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

// parallel runs f(0..n-1) on up to GOMAXPROCS goroutines. Callers make every f(i)
// write disjoint outputs, so the result does not depend on scheduling.
func parallel(n int, f func(i int)) {
	workers := min(runtime.GOMAXPROCS(0), n)
	if workers <= 1 {
		for i := range n {
			f(i)
		}
		return
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				f(i)
			}
		}()
	}
	wg.Wait()
}

// parallelRange cuts [0,n) into fixed blocks of size grain and runs f(lo,hi) on each.
func parallelRange(n, grain int, f func(lo, hi int)) {
	parallel((n+grain-1)/grain, func(i int) {
		lo := i * grain
		f(lo, min(n, lo+grain))
	})
}

func mustShape(op string, t *Tensor, shape ...int) {
	if len(t.Shape) != len(shape) {
		panic(fmt.Sprintf("%s: shape %v, want %v", op, t.Shape, shape))
	}
	for i := range shape {
		if t.Shape[i] != shape[i] {
			panic(fmt.Sprintf("%s: shape %v, want %v", op, t.Shape, shape))
		}
	}
}

// matDims checks that t is a matrix and returns its dimensions.
func matDims(op, what string, t *Tensor) (rows, cols int) {
	if len(t.Shape) != 2 {
		panic(fmt.Sprintf("%s: %s has shape %v, want a matrix", op, what, t.Shape))
	}
	return t.Shape[0], t.Shape[1]
}

func mustLen(op, what string, t *Tensor, n int) {
	if t.Len() != n {
		panic(fmt.Sprintf("%s: %s has %d elements %v, want %d", op, what, t.Len(), t.Shape, n))
	}
}

// ParallelRange runs f over fixed blocks [lo,hi) of [0,n) of size grain on up to
// GOMAXPROCS goroutines. The blocks depend only on n and grain, so an f that
// writes only its own block gives the same result at any thread count.
func ParallelRange(n, grain int, f func(lo, hi int)) { parallelRange(n, grain, f) }
