package sgemm

import (
	"fmt"
	"sync"
)

// GemmStridedBatched computes batch independent products, item i on the
// matrices that start at a[i·strideA], b[i·strideB] and c[i·strideC] (the
// layout of cuBLAS's SgemmStridedBatched, and of attention's heads), running
// the items on up to workers goroutines. Each item's bits are Gemm's.
func (e *Engine) GemmStridedBatched(workers int, ta, tb bool, m, n, k int, alpha float32,
	a []float32, lda, strideA int, b []float32, ldb, strideB int,
	beta float32, c []float32, ldc, strideC int, batch int) {
	if batch < 0 || strideA < 0 || strideB < 0 || strideC < 0 {
		panic(fmt.Sprintf("sgemm: batched: batch %d, strides %d %d %d must not be negative", batch, strideA, strideB, strideC))
	}
	forEach(workers, batch, func(i int) {
		e.Gemm(ta, tb, m, n, k, alpha, tail(a, i*strideA), lda, tail(b, i*strideB), ldb, beta, tail(c, i*strideC), ldc)
	})
}

// tail is s[off:], or empty past the end (Gemm then names the short operand).
func tail(s []float32, off int) []float32 {
	if off > len(s) {
		return nil
	}
	return s[off:]
}

// forEach runs f(0..n-1) on up to workers goroutines; every f(i) writes its
// own output, so the result does not depend on which goroutine ran it.
func forEach(workers, n int, f func(i int)) {
	workers = min(workers, n)
	if workers <= 1 {
		for i := range n {
			f(i)
		}
		return
	}
	next := make(chan int, n)
	for i := range n {
		next <- i
	}
	close(next)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for i := range next {
				f(i)
			}
		})
	}
	wg.Wait()
}
