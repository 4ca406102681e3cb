//go:build cgo

package cbits

/*
#include <stddef.h>
static const char *pp_bl_s(void *f, int st) { return ((const char *(*)(int))f)(st); }
static int pp_bl_create(void *f, size_t *h) { return ((int (*)(size_t *))f)(h); }
static int pp_bl_h(void *f, size_t h) { return ((int (*)(void *))f)((void *)h); }
static int pp_bl_hh(void *f, size_t h, size_t s) { return ((int (*)(void *, void *))f)((void *)h, (void *)s); }
static int pp_bl_hi(void *f, size_t h, int m) { return ((int (*)(void *, int))f)((void *)h, m); }
static int pp_bl_ws(void *f, size_t h, size_t p, size_t n) { return ((int (*)(void *, void *, size_t))f)((void *)h, (void *)p, n); }
typedef int (*pp_sgemm_v2)(void *, int, int, int, int, int, const float *, const float *, int,
	const float *, int, const float *, float *, int);
typedef int (*pp_sgemm_sb)(void *, int, int, int, int, int, const float *, const float *, int, long long,
	const float *, int, long long, const float *, float *, int, long long, int);
static int pp_bl_sgemm(void *f, size_t h, int ta, int tb, int m, int n, int k, float alpha,
		size_t a, int lda, size_t b, int ldb, float beta, size_t c, int ldc) {
	return ((pp_sgemm_v2)f)((void *)h, ta, tb, m, n, k, &alpha, (const float *)a, lda,
		(const float *)b, ldb, &beta, (float *)c, ldc);
}
static int pp_bl_sgemm_sb(void *f, size_t h, int ta, int tb, int m, int n, int k, float alpha,
		size_t a, int lda, long long sa, size_t b, int ldb, long long sb, float beta,
		size_t c, int ldc, long long sc, int batch) {
	return ((pp_sgemm_sb)f)((void *)h, ta, tb, m, n, k, &alpha, (const float *)a, lda, sa,
		(const float *)b, ldb, sb, &beta, (float *)c, ldc, sc, batch);
}
typedef int (*pp_gemm_ex)(void *, int, int, int, int, int, const void *, const void *, int, int,
	const void *, int, int, const void *, void *, int, int, int, int);
typedef int (*pp_gemm_sbex)(void *, int, int, int, int, int, const void *, const void *, int, int, long long,
	const void *, int, int, long long, const void *, void *, int, int, long long, int, int, int);
// pp_bl_gemm_ex is cublasGemmEx (batch <= 1) or cublasGemmStridedBatchedEx
// with float32 scalars, compute type c and the default algorithm.
static int pp_bl_gemm_ex(void *ex, void *sbex, size_t h, int ta, int tb, int m, int n, int k, float alpha,
		size_t a, int at, int lda, long long sa, size_t b, int bt, int ldb, long long sb, float beta,
		size_t c, int ct, int ldc, long long sc, int batch, int compute) {
	if (batch <= 1)
		return ((pp_gemm_ex)ex)((void *)h, ta, tb, m, n, k, &alpha, (const void *)a, at, lda,
			(const void *)b, bt, ldb, &beta, (void *)c, ct, ldc, compute, -1);
	return ((pp_gemm_sbex)sbex)((void *)h, ta, tb, m, n, k, &alpha, (const void *)a, at, lda, sa,
		(const void *)b, bt, ldb, sb, &beta, (void *)c, ct, ldc, sc, batch, compute, -1);
}
*/
import "C"

import (
	"fmt"
	"math"
)

// cuBLAS enum values the binding passes.
const (
	blasOpN           = 0  // CUBLAS_OP_N
	blasOpT           = 1  // CUBLAS_OP_T
	blasDefaultMath   = 0  // CUBLAS_DEFAULT_MATH
	blasTF32TensorOps = 3  // CUBLAS_TF32_TENSOR_OP_MATH
	blasCompute32F    = 68 // CUBLAS_COMPUTE_32F: float32 accumulation, no reduced-precision shortcut
	// CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION, a flag of the math mode
	blasNoReducedReduction = 16
)

// blasErr is the error for a cuBLAS status, with cuBLAS's own name and text.
func (c *CUDALibs) blasErr(st C.int, call string) error {
	if st == 0 {
		return nil
	}
	return &CUDAError{Lib: "cuBLAS", Call: call, Code: int(st),
		Name:    C.GoString(C.pp_bl_s(c.bl[blGetStatusName], st)),
		Message: C.GoString(C.pp_bl_s(c.bl[blGetStatusString], st))}
}

// BlasCreate creates a cuBLAS handle on the current device.
func (c *CUDALibs) BlasCreate() (BlasHandle, error) {
	var h C.size_t
	st := C.pp_bl_create(c.bl[blCreate], &h)
	return BlasHandle(h), c.blasErr(st, "cublasCreate_v2")
}

// BlasDestroy destroys h.
func (c *CUDALibs) BlasDestroy(h BlasHandle) error {
	return c.blasErr(C.pp_bl_h(c.bl[blDestroy], C.size_t(h)), "cublasDestroy_v2")
}

// BlasSetStream makes h queue its work on s.
func (c *CUDALibs) BlasSetStream(h BlasHandle, s Stream) error {
	return c.blasErr(C.pp_bl_hh(c.bl[blSetStream], C.size_t(h), C.size_t(s)), fmt.Sprintf("cublasSetStream_v2(%#x)", uintptr(s)))
}

// BlasSetTF32 lets h's fp32 GEMMs use TF32 tensor cores (on), or keeps them
// full fp32 (off, cuBLAS's default math). Either way the mode carries
// CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION: a product with a bfloat16
// C reduces split-K partial sums in float32, not in bfloat16, so its output
// is rounded once.
func (c *CUDALibs) BlasSetTF32(h BlasHandle, on bool) error {
	mode, name := blasDefaultMath, "CUBLAS_DEFAULT_MATH"
	if on {
		mode, name = blasTF32TensorOps, "CUBLAS_TF32_TENSOR_OP_MATH"
	}
	mode |= blasNoReducedReduction
	return c.blasErr(C.pp_bl_hi(c.bl[blSetMathMode], C.size_t(h), C.int(mode)), "cublasSetMathMode("+name+" | CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION)")
}

// BlasSetWorkspace gives h its own workspace (one per stream keeps results
// reproducible when several streams run GEMMs).
func (c *CUDALibs) BlasSetWorkspace(h BlasHandle, p DevPtr, bytes int) error {
	st := C.pp_bl_ws(c.bl[blSetWorkspace], C.size_t(h), C.size_t(p), C.size_t(bytes))
	return c.blasErr(st, fmt.Sprintf("cublasSetWorkspace_v2(%#x, %d)", uintptr(p), bytes))
}

func blasOp(t bool) C.int {
	if t {
		return blasOpT
	}
	return blasOpN
}

func opName(t bool) string {
	if t {
		return "T"
	}
	return "N"
}

// checkInts refuses a dimension cuBLAS's int arguments cannot hold.
func checkInts(call string, vs ...int) error {
	for _, v := range vs {
		if v > math.MaxInt32 || v < math.MinInt32 {
			return fmt.Errorf("%s: %d does not fit cuBLAS's 32-bit int arguments", call, v)
		}
	}
	return nil
}

// Sgemm is cublasSgemm_v2 (column-major): C = alpha·op(A)·op(B) + beta·C,
// C m×n, op(A) m×k, op(B) k×n; with beta 0, C is not read.
func (c *CUDALibs) Sgemm(h BlasHandle, transA, transB bool, m, n, k int, alpha float32, A DevPtr, lda int,
	B DevPtr, ldb int, beta float32, Cm DevPtr, ldc int) error {
	call := func() string {
		return fmt.Sprintf("cublasSgemm_v2(%s%s, m=%d n=%d k=%d, lda=%d ldb=%d ldc=%d)", opName(transA), opName(transB), m, n, k, lda, ldb, ldc)
	}
	if err := checkInts("cublasSgemm_v2", m, n, k, lda, ldb, ldc); err != nil {
		return err
	}
	st := C.pp_bl_sgemm(c.bl[blSgemm], C.size_t(h), blasOp(transA), blasOp(transB), C.int(m), C.int(n), C.int(k),
		C.float(alpha), C.size_t(A), C.int(lda), C.size_t(B), C.int(ldb), C.float(beta), C.size_t(Cm), C.int(ldc))
	if st != 0 {
		return c.blasErr(st, call())
	}
	return nil
}

// SgemmStridedBatched is cublasSgemmStridedBatched: batch independent Sgemms,
// the i-th on A+i·strideA, B+i·strideB, C+i·strideC (strides in elements).
func (c *CUDALibs) SgemmStridedBatched(h BlasHandle, transA, transB bool, m, n, k int, alpha float32,
	A DevPtr, lda int, strideA int64, B DevPtr, ldb int, strideB int64, beta float32,
	Cm DevPtr, ldc int, strideC int64, batch int) error {
	if err := checkInts("cublasSgemmStridedBatched", m, n, k, lda, ldb, ldc, batch); err != nil {
		return err
	}
	st := C.pp_bl_sgemm_sb(c.bl[blSgemmStridedBatched], C.size_t(h), blasOp(transA), blasOp(transB),
		C.int(m), C.int(n), C.int(k), C.float(alpha), C.size_t(A), C.int(lda), C.longlong(strideA),
		C.size_t(B), C.int(ldb), C.longlong(strideB), C.float(beta), C.size_t(Cm), C.int(ldc), C.longlong(strideC), C.int(batch))
	if st != 0 {
		return c.blasErr(st, fmt.Sprintf("cublasSgemmStridedBatched(%s%s, m=%d n=%d k=%d, lda=%d ldb=%d ldc=%d, strides %d %d %d, batch %d)",
			opName(transA), opName(transB), m, n, k, lda, ldb, ldc, strideA, strideB, strideC, batch))
	}
	return nil
}

// GemmEx is cublasGemmEx (g.Batch <= 1) or cublasGemmStridedBatchedEx: the
// product g describes with operands of their own types (bfloat16 A and B
// with a bfloat16 or float32 C), accumulated in float32
// (CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT); with Beta 0, C is not read.
func (c *CUDALibs) GemmEx(h BlasHandle, g Gemm) error {
	name := "cublasGemmEx"
	if g.Batch > 1 {
		name = "cublasGemmStridedBatchedEx"
	}
	if err := checkInts(name, g.M, g.N, g.K, g.A.LD, g.B.LD, g.C.LD, g.Batch); err != nil {
		return err
	}
	st := C.pp_bl_gemm_ex(c.bl[blGemmEx], c.bl[blGemmStridedBatchedEx], C.size_t(h), blasOp(g.TransA), blasOp(g.TransB),
		C.int(g.M), C.int(g.N), C.int(g.K), C.float(g.Alpha),
		C.size_t(g.A.Ptr), C.int(g.A.Type), C.int(g.A.LD), C.longlong(g.A.Stride),
		C.size_t(g.B.Ptr), C.int(g.B.Type), C.int(g.B.LD), C.longlong(g.B.Stride), C.float(g.Beta),
		C.size_t(g.C.Ptr), C.int(g.C.Type), C.int(g.C.LD), C.longlong(g.C.Stride), C.int(g.Batch), blasCompute32F)
	if st != 0 {
		return c.blasErr(st, fmt.Sprintf("%s(%s%s, m=%d n=%d k=%d, A %v lda=%d, B %v ldb=%d, C %v ldc=%d, batch %d)",
			name, opName(g.TransA), opName(g.TransB), g.M, g.N, g.K, g.A.Type, g.A.LD, g.B.Type, g.B.LD, g.C.Type, g.C.LD, g.Batch))
	}
	return nil
}
