package sgemm

import (
	"sync"
)

// parallelMin is the size (m·n·k) below which a product runs on one goroutine:
// starting workers costs more than it saves.
const parallelMin = 1 << 20

// minBand is the narrowest band a worker gets: each band packs its own B (or
// reads its own A), and a product waits for its slowest band, so thin bands
// cost more than a second core gives back, most on a loaded machine (as the
// OpenBLAS path's blocks of at least 512 rows).
const minBand = 512

// Split cuts an m×n product for up to workers goroutines into bands of whole
// tiles: rows when C is at least as tall as wide, else columns; bands are at
// least minBand wide. It returns the band width and whether the bands are
// rows. Bits do not depend on it.
func Split(m, n, k, workers, mr, nr int) (band int, rows bool) {
	rows = m >= n
	dim, tile := n, nr
	if rows {
		dim, tile = m, mr
	}
	if workers <= 1 || int64(m)*int64(n)*int64(k) < parallelMin {
		return dim, rows
	}
	return min(dim, max(roundUp(minBand, tile), roundUp((dim+workers-1)/workers, tile))), rows
}

func roundUp(v, to int) int { return (v + to - 1) / to * to }

// GemmParallel is Gemm on up to workers goroutines, each computing its own
// band of C (Split) with the whole of K: the same bits as Gemm.
func (e *Engine) GemmParallel(workers int, ta, tb bool, m, n, k int, alpha float32, a []float32, lda int,
	b []float32, ldb int, beta float32, c []float32, ldc int) {
	checkArgs(ta, tb, m, n, k, len(a), lda, len(b), ldb, len(c), ldc)
	band, rows := Split(m, n, k, workers, e.kern.MR, e.kern.NR)
	dim := n
	if rows {
		dim = m
	}
	if band >= dim {
		e.Gemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
		return
	}
	var wg sync.WaitGroup
	for lo := 0; lo < dim; lo += band {
		hi := min(dim, lo+band)
		wg.Go(func() {
			if rows {
				ao := lo * lda
				if ta {
					ao = lo
				}
				e.Gemm(ta, tb, hi-lo, n, k, alpha, a[ao:], lda, b, ldb, beta, c[lo*ldc:], ldc)
				return
			}
			bo := lo
			if tb {
				bo = lo * ldb
			}
			e.Gemm(ta, tb, m, hi-lo, k, alpha, a, lda, b[bo:], ldb, beta, c[lo:], ldc)
		})
	}
	wg.Wait()
}
