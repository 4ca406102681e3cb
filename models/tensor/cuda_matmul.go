package tensor

import (
	"fmt"

	"github.com/pplaunch/pplaunch/cbits"
)

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

// gemmOperand is one row-major matrix of gemmEx: its address, dtype, leading
// dimension (row length as stored) and batch stride, in elements.
type gemmOperand struct {
	p      devPtr
	dt     DType
	ld     int
	stride int64
}

func (o gemmOperand) blas() cbits.GemmOperand {
	t := cbits.DataFloat32
	if o.dt == BFloat16 {
		t = cbits.DataBFloat16
	}
	return cbits.GemmOperand{Ptr: cbits.DevPtr(o.p), Type: t, LD: o.ld, Stride: o.stride}
}

// gemmEx is gemm (batch 1) or gemmBatched with operands of their own dtypes
// through cublasGemmEx: float32 accumulation, C rounded once to its dtype.
func (c *CUDA) gemmEx(ta, tb bool, m, n, k int, alpha float32, a, b gemmOperand, beta float32, cc gemmOperand, batch int) {
	if m == 0 || n == 0 || batch == 0 {
		return
	}
	g := cbits.Gemm{TransA: tb, TransB: ta, M: n, N: m, K: k, Alpha: alpha, Beta: beta, A: b.blas(), B: a.blas(), C: cc.blas(), Batch: batch}
	c.dev.enqueue(fmt.Sprintf("gemm ex %d×%dx%dx%d", batch, m, n, k), func() error { return c.dev.api.GemmEx(c.dev.blas, g) })
}

// bf16Operand is t as a bfloat16 product operand: t itself, or a float32 t
// rounded to nearest even into scratch, which the caller gives back with
// c.alloc.put once the product is queued (nil when there is none). Rounding
// per call costs a read of 4 and a write of 2 bytes per weight element, a
// few percent of a product's time at the shapes of a GPT; a cache of rounded
// weights would have to follow every write to them.
func (c *CUDA) bf16Operand(op string, t *Tensor, ld int) (gemmOperand, *devBlock) {
	p := c.ptrAny(op, t)
	if t.dtype == BFloat16 {
		return gemmOperand{p: p, dt: BFloat16, ld: ld}, nil
	}
	n := t.Len()
	b := c.tmp((n + 1) / 2)
	if n > 0 {
		c.launch("convert", c.chunkGrid(n), blk(elemBlock), 0, b.ptr, p, int64(n), int32(1)) // bfloat16 from float32
	}
	return gemmOperand{p: b.ptr, dt: BFloat16, ld: ld}, b
}

// putAll gives back the scratch blocks that are not nil.
func (c *CUDA) putAll(bs ...*devBlock) {
	for _, b := range bs {
		if b != nil {
			c.alloc.put(b)
		}
	}
}

// MatMul computes c = alpha·op(a)·op(b) + beta·c: SGEMM on float32 tensors,
// else bfloat16 operands with float32 accumulation and c rounded once.
func (c *CUDA) MatMul(cc, a *Tensor, ta bool, b *Tensor, tb bool, alpha, beta float32) {
	m, n, k, lda, ldb := matMulDims(cc, a, ta, b, tb)
	if !anyBF16(cc, a, b) {
		c.gemm(ta, tb, m, n, k, alpha, c.ptr("matmul", a), lda, c.ptr("matmul", b), ldb, beta, c.ptr("matmul", cc), n)
		return
	}
	ao, ab := c.bf16Operand("matmul", a, lda)
	bo, bb := c.bf16Operand("matmul", b, ldb)
	c.gemmEx(ta, tb, m, n, k, alpha, ao, bo, beta, gemmOperand{p: c.ptrAny("matmul", cc), dt: cc.dtype, ld: n}, 1)
	c.putAll(ab, bb)
}

// Linear computes y = x·wᵀ + bias (+ residual). In float32, y starts as
// residual + bias and the product adds onto it, as on the CPU. With a
// bfloat16 tensor, the product of the rounded operands accumulates in
// float32 and the bias and residual are added in float32 before y is
// rounded once: straight from cuBLAS without them, else through a float32
// scratch and linear_epilogue.
func (c *CUDA) Linear(y, x, w, bias, residual *Tensor) {
	const op = "linear"
	n, in, out := linearDims(y, x, w, bias, residual)
	extra := bias != nil || residual != nil
	if !anyBF16(y, x, w, bias, residual) {
		yp := c.ptr(op, y)
		beta := float32(0)
		if extra {
			c.launch("bias_residual", c.elementGrid(n*out), blk(elemBlock), 0,
				yp, c.ptr(op, bias), c.ptr(op, residual), int32(n), int32(out), int32(0))
			beta = 1
		}
		c.gemm(false, true, n, out, in, 1, c.ptr(op, x), in, c.ptr(op, w), in, beta, yp, out)
		return
	}
	xo, xb := c.bf16Operand(op, x, in)
	wo, wb := c.bf16Operand(op, w, in)
	defer c.putAll(xb, wb)
	yo := gemmOperand{p: c.ptrAny(op, y), dt: y.dtype, ld: out}
	switch {
	case !extra:
		c.gemmEx(false, true, n, out, in, 1, xo, wo, 0, yo, 1)
	case y.dtype == Float32:
		c.launch("bias_residual", c.elementGrid(n*out), blk(elemBlock), 0,
			yo.p, c.ptrAny(op, bias), c.ptrAny(op, residual), int32(n), int32(out), dtBits(bias, residual))
		c.gemmEx(false, true, n, out, in, 1, xo, wo, 1, yo, 1)
	default:
		acc := c.tmp(n * out)
		c.gemmEx(false, true, n, out, in, 1, xo, wo, 0, gemmOperand{p: acc.ptr, dt: Float32, ld: out}, 1)
		if n*out > 0 {
			c.launch("linear_epilogue", c.elementGrid(n*out), blk(elemBlock), 0,
				yo.p, acc.ptr, c.ptrAny(op, bias), c.ptrAny(op, residual), int32(n), int32(out), dtBits(y, bias, residual))
		}
		c.alloc.put(acc)
	}
}

// LinearBackwardInput computes dx = dy·w.
func (c *CUDA) LinearBackwardInput(dx, dy, w *Tensor) {
	const op = "linear backward input"
	n, in, out := linearBackwardInputDims(dx, dy, w)
	if !anyBF16(dx, dy, w) {
		c.gemm(false, false, n, in, out, 1, c.ptr(op, dy), out, c.ptr(op, w), in, 0, c.ptr(op, dx), in)
		return
	}
	do, db := c.bf16Operand(op, dy, out)
	wo, wb := c.bf16Operand(op, w, in)
	c.gemmEx(false, false, n, in, out, 1, do, wo, 0, gemmOperand{p: c.ptrAny(op, dx), dt: dx.dtype, ld: in}, 1)
	c.putAll(db, wb)
}

// LinearBackwardWeight computes dw = dyᵀ·x and dbias = Σ_rows dy (each in
// its own dtype: float32 for the gradients of float32 parameters).
func (c *CUDA) LinearBackwardWeight(dw, dbias, dy, x *Tensor) {
	const op = "linear backward weight"
	n, in, out := linearBackwardWeightDims(dw, dbias, dy, x)
	if !anyBF16(dw, dy, x) {
		c.gemm(true, false, out, in, n, 1, c.ptr(op, dy), out, c.ptr(op, x), in, 0, c.ptr(op, dw), in)
	} else {
		do, db := c.bf16Operand(op, dy, out)
		xo, xb := c.bf16Operand(op, x, in)
		c.gemmEx(true, false, out, in, n, 1, do, xo, 0, gemmOperand{p: c.ptrAny(op, dw), dt: dw.dtype, ld: in}, 1)
		c.putAll(db, xb)
	}
	if dbias != nil {
		c.colSums(dbias, dy, n, out)
	}
}
