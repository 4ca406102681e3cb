package tensor

import "fmt"

// gemm computes the row-major C[m×n] = alpha·op(A)·op(B) + beta·C with
// column-major cuBLAS: a row-major matrix is the column-major transpose, so
// Cᵀ = op(B)ᵀ·op(A)ᵀ is one call with the operands (and m, n) swapped.
// lda, ldb and ldc are row-major leading dimensions (row lengths as stored).
func (c *CUDA) gemm(ta, tb bool, m, n, k int, alpha float32, a devPtr, lda int, b devPtr, ldb int, beta float32, cc devPtr, ldc int) {
	if m == 0 || n == 0 {
		return
	}
	c.dev.enqueue(fmt.Sprintf("sgemm %dx%dx%d", m, n, k), func() error {
		return c.dev.api.Sgemm(c.dev.blas, tb, ta, n, m, k, alpha, b, ldb, a, lda, beta, cc, ldc)
	})
}

// gemmBatched is gemm over batch matrices, each operand advancing by its stride
// (in elements) from one to the next.
func (c *CUDA) gemmBatched(ta, tb bool, m, n, k int, alpha float32, a devPtr, lda int, sa int64,
	b devPtr, ldb int, sb int64, beta float32, cc devPtr, ldc int, sc int64, batch int) {
	if m == 0 || n == 0 || batch == 0 {
		return
	}
	c.dev.enqueue(fmt.Sprintf("sgemm batched %d×%dx%dx%d", batch, m, n, k), func() error {
		return c.dev.api.SgemmStridedBatched(c.dev.blas, tb, ta, n, m, k, alpha, b, ldb, sb, a, lda, sa, beta, cc, ldc, sc, batch)
	})
}

// MatMul computes c = alpha·op(a)·op(b) + beta·c.
func (c *CUDA) MatMul(cc, a *Tensor, ta bool, b *Tensor, tb bool, alpha, beta float32) {
	m, n, k, lda, ldb := matMulDims(cc, a, ta, b, tb)
	c.gemm(ta, tb, m, n, k, alpha, c.ptr("matmul", a), lda, c.ptr("matmul", b), ldb, beta, c.ptr("matmul", cc), n)
}

// Linear computes y = x·wᵀ + bias (+ residual): y starts as residual + bias and
// the product adds onto it, as on the CPU.
func (c *CUDA) Linear(y, x, w, bias, residual *Tensor) {
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
	yp := c.ptr("linear", y)
	beta := float32(0)
	if bias != nil || residual != nil {
		c.launch("bias_residual", c.elementGrid(n*out), blk(elemBlock), 0,
			yp, c.ptr("linear", bias), c.ptr("linear", residual), int32(n), int32(out))
		beta = 1
	}
	c.gemm(false, true, n, out, in, 1, c.ptr("linear", x), in, c.ptr("linear", w), in, beta, yp, out)
}

// LinearBackwardInput computes dx = dy·w.
func (c *CUDA) LinearBackwardInput(dx, dy, w *Tensor) {
	out, in := matDims("linear backward input", "w", w)
	n := dy.Len() / out
	mustLen("linear backward input", "dy", dy, n*out)
	mustLen("linear backward input", "dx", dx, n*in)
	c.gemm(false, false, n, in, out, 1, c.ptr("linear backward input", dy), out, c.ptr("linear backward input", w), in, 0, c.ptr("linear backward input", dx), in)
}

// LinearBackwardWeight computes dw = dyᵀ·x and dbias = Σ_rows dy.
func (c *CUDA) LinearBackwardWeight(dw, dbias, dy, x *Tensor) {
	const op = "linear backward weight"
	out, in := matDims(op, "dw", dw)
	n := x.Len() / in
	mustLen(op, "dy", dy, n*out)
	mustLen(op, "x", x, n*in)
	c.gemm(true, false, out, in, n, 1, c.ptr(op, dy), out, c.ptr(op, x), in, 0, c.ptr(op, dw), in)
	if dbias != nil {
		mustLen(op, "dbias", dbias, out)
		c.colSums(c.ptr(op, dbias), c.ptr(op, dy), n, out)
	}
}

// colChunk is the number of rows whose column sums the first pass of a column
// reduction adds; the second pass adds the chunks in order.
const colChunk = 64

func colGrid(chunks, cols int) [3]uint32 {
	return [3]uint32{uint32(max(chunks, 1)), uint32((cols + colBlock - 1) / colBlock), 1}
}

// colSums sets s[j] = Σ_r m[r,j] in two fixed passes.
func (c *CUDA) colSums(s, m devPtr, rows, cols int) {
	if cols == 0 {
		return
	}
	chunks := (rows + colChunk - 1) / colChunk
	part := c.tmp(max(chunks, 1) * cols)
	if chunks == 0 {
		c.memset(s, cols*4)
	} else {
		c.launch("colsum_partial", colGrid(chunks, cols), blk(colBlock), 0, part.ptr, m, int32(rows), int32(cols), int32(colChunk))
		c.launch("colsum_final", blk((cols+colBlock-1)/colBlock), blk(colBlock), 0, s, part.ptr, int32(chunks), int32(cols))
	}
	c.alloc.put(part)
}
