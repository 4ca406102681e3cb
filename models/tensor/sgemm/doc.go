// Package sgemm is a single-precision matrix product, C = alpha·op(A)·op(B) +
// beta·C on row-major matrices, in the GotoBLAS/BLIS structure: B is packed
// (scaled by alpha) into kc×nc panels of NR-wide slivers that stay in cache
// while mc×kc blocks of A stream past them, and an MR×NR register
// micro-kernel updates one tile of C from MR rows of A and one sliver of B.
// The kernel reads A in place through its row and column strides, as BLIS's
// small-matrix kernels do, with unrolled variants for a row-major and for a
// column-major (transposed) A: copying A cost as much as the arithmetic on
// the narrow products of a training step, and a row-major A's copy (a
// transpose) more than it saved on wide ones, measured in alternating rounds.
// A transposed A is packed for blocks 512 columns or wider, and a block's
// last sliver of fewer than MR rows always is (with zero rows). The kernel is chosen once from CPUID:
// AVX-512 (12×32), AVX2 with FMA (6×16), or portable Go (4×4).
//
// The result is deterministic by construction, not by a fixed thread count:
// every element of C is one chain c ← fma(a[k], alpha·b[k], c), k = 0..K-1 in
// order, starting from beta·C (0 when beta is 0). A micro-kernel loads the
// partial sums from C for every kc-panel after the first, so cutting K into
// panels, M and N into blocks and tiles, the product into row slices, or the
// work across threads changes where a sum is kept between panels, never the
// order in which it is formed. The AVX2 and AVX-512 kernels therefore give the
// same bits as each other on one machine.
//
// It imports nothing of the project.
package sgemm
