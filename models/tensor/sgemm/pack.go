package sgemm

// packSliver writes k rows of width floats to dst: row p holds, in lanes
// i < valid, alpha·src[p·pstride + i·lane], and zeros after.
func (e *Engine) packSliver(dst, src []float32, lane, pstride, k, width, valid int, alpha float32) {
	if lane == 1 && e.kern.copyRows != nil && e.kern.copyRows(dst, src, pstride, k, width, valid, alpha) {
		return
	}
	if lane == 1 { // each row's values are contiguous
		for p := range k {
			dp := dst[p*width : p*width+width]
			sp := src[p*pstride : p*pstride+valid]
			if alpha == 1 {
				copy(dp, sp)
			} else {
				for i, v := range sp {
					dp[i] = v * alpha
				}
			}
			clear(dp[valid:])
		}
		return
	}
	for i := range valid { // each lane's values are contiguous when pstride is 1
		s := src[i*lane : i*lane+(k-1)*pstride+1]
		for p := range k {
			dst[p*width+i] = s[p*pstride] * alpha
		}
	}
	for i := valid; i < width; i++ {
		for p := range k {
			dst[p*width+i] = 0
		}
	}
}

// packB copies the kb×nb block of op(B) at (p0, j0), times alpha, into dst
// as NR-wide slivers: sliver s holds, for each p in order, the nr values of
// row p0+p in columns j0+s·nr..; columns past the block are zero.
func (e *Engine) packB(dst, b []float32, ldb int, tb bool, p0, j0, kb, nb int, alpha float32) {
	nr := e.kern.NR
	lane, pstride := 1, ldb // op(B)[p][j] = b[p*ldb+j]
	if tb {
		lane, pstride = ldb, 1 // op(B)[p][j] = b[j*ldb+p]
	}
	for s := 0; s*nr < nb; s++ {
		c0 := j0 + s*nr
		e.packSliver(dst[s*nr*kb:(s+1)*nr*kb], b[c0*lane+p0*pstride:], lane, pstride, kb, nr, min(nr, nb-s*nr), alpha)
	}
}

// strides returns where op(A)[r][p] lies: a[r·rs + p·cs].
func strides(lda int, ta bool) (rs, cs int) {
	if ta {
		return 1, lda
	}
	return lda, 1
}
