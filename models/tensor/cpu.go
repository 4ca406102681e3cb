package tensor

import (
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

// ParallelRange runs f over fixed blocks [lo,hi) of [0,n) of size grain on up to
// GOMAXPROCS goroutines. The blocks depend only on n and grain, so an f that
// writes only its own block gives the same result at any thread count.
func ParallelRange(n, grain int, f func(lo, hi int)) { parallelRange(n, grain, f) }

// rowGrain is the fixed number of rows one task handles in row-wise operations.
const rowGrain = 64

// colGrain is the fixed number of columns one task sums over all rows in
// column reductions (bias and LayerNorm weight gradients): each column is summed
// in row order by exactly one task. Wide blocks keep the inner loops long.
const colGrain = 256

// scratch returns a buffer of n floats (contents undefined) from a pool.
func (c *CPU) scratch(n int) []float32 {
	if p, ok := c.pool.Get().(*[]float32); ok && cap(*p) >= n {
		return (*p)[:n]
	}
	return make([]float32, n)
}

// release returns a scratch buffer to the pool.
func (c *CPU) release(b []float32) { c.pool.Put(&b) }

// optGrain is the block of elements one task updates in the optimizers and
// in Scale: each element is independent, so the cut only spreads the work.
const optGrain = 1 << 14
