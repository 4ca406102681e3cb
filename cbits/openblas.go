//go:build cgo

package cbits

/*
typedef void (*pp_sgemm_fn)(int order, int ta, int tb, int m, int n, int k, float alpha,
	const float *a, int lda, const float *b, int ldb, float beta, float *c, int ldc);
typedef char *(*pp_config_fn)(void);
typedef void (*pp_threads_fn)(int);

static void pp_sgemm(void *fn, int ta, int tb, int m, int n, int k, float alpha,
	const float *a, int lda, const float *b, int ldb, float beta, float *c, int ldc) {
	// 101 = CblasRowMajor, 111 = CblasNoTrans, 112 = CblasTrans.
	((pp_sgemm_fn)fn)(101, ta ? 112 : 111, tb ? 112 : 111, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}
static const char *pp_config(void *fn) { return ((pp_config_fn)fn)(); }
static void pp_set_threads(void *fn, int n) { ((pp_threads_fn)fn)(n); }

#include <stdlib.h>
// pp_best_coretype names the OpenBLAS kernel family this CPU supports, or NULL.
static const char *pp_best_coretype(void) {
#if defined(__x86_64__)
	__builtin_cpu_init();
	if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
	    __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq"))
		return "SKYLAKEX";
	if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
		return "HASWELL";
#endif
	return NULL;
}
static void pp_setenv(const char *k, const char *v) { setenv(k, v, 0); }
*/
import "C"

import (
	"fmt"
	"sync"
	"unsafe"
)

// OpenBLASSoname is the library OpenBLAS loads from.
const OpenBLASSoname = "libopenblas.so.0"

// OpenBLAS is a loaded OpenBLAS, held single-threaded: callers parallelise over
// independent output blocks themselves, so results never depend on a thread count.
type OpenBLAS struct {
	config string
	sgemm  unsafe.Pointer
}

var (
	openblasOnce sync.Once
	openblasLib  *OpenBLAS
	openblasErr  error
)

// LoadOpenBLAS opens libopenblas.so.0 once per process. It refuses a library
// without openblas_get_config (a reference BLAS installed under that name would be
// an order of magnitude slower).
func LoadOpenBLAS() (*OpenBLAS, error) {
	openblasOnce.Do(func() { openblasLib, openblasErr = loadOpenBLAS(OpenBLASSoname) })
	return openblasLib, openblasErr
}

// loadOpenBLAS opens soname and checks that it is OpenBLAS.
func loadOpenBLAS(soname string) (*OpenBLAS, error) {
	// OpenBLAS picks its kernels from CPUID when it loads, and under some
	// hypervisors it does not recognise the CPU and falls back to Prescott
	// (SSE3) kernels, ten times slower. Unless the user chose a core with
	// OPENBLAS_CORETYPE (setenv's last argument 0 leaves a value that is set
	// alone), name the best family the CPU's features allow. Set in the C
	// environment only, which OpenBLAS reads: Go's os.Environ, and so the
	// environment of processes Go starts, keeps the user's.
	if ct := C.pp_best_coretype(); ct != nil {
		k := C.CString("OPENBLAS_CORETYPE")
		C.pp_setenv(k, ct)
		C.free(unsafe.Pointer(k))
	}
	lib, err := open(soname)
	if err != nil {
		return nil, fmt.Errorf("load OpenBLAS: %w", err)
	}
	cfg, err := lib.sym("openblas_get_config")
	if err != nil {
		return nil, fmt.Errorf("load OpenBLAS: %w (not OpenBLAS: a reference BLAS would be ten times slower)", err)
	}
	threads, err := lib.sym("openblas_set_num_threads")
	if err != nil {
		return nil, fmt.Errorf("load OpenBLAS: %w", err)
	}
	sgemm, err := lib.sym("cblas_sgemm")
	if err != nil {
		return nil, fmt.Errorf("load OpenBLAS: %w", err)
	}
	C.pp_set_threads(threads, 1)
	return &OpenBLAS{config: C.GoString(C.pp_config(cfg)), sgemm: sgemm}, nil
}

// Config is OpenBLAS's own description of its build (version, core, threading).
func (o *OpenBLAS) Config() string { return o.config }

// Sgemm computes C = alpha·op(A)·op(B) + beta·C on row-major matrices, where op
// transposes when ta/tb is set; C is m×n and the inner dimension is k. The
// slices must cover the strided extents; callers check shapes.
func (o *OpenBLAS) Sgemm(ta, tb bool, m, n, k int, alpha float32, a []float32, lda int,
	b []float32, ldb int, beta float32, c []float32, ldc int) {
	if m == 0 || n == 0 {
		return
	}
	var pa, pb *float32
	if len(a) > 0 {
		pa = &a[0]
	}
	if len(b) > 0 {
		pb = &b[0]
	}
	C.pp_sgemm(o.sgemm, cbool(ta), cbool(tb), C.int(m), C.int(n), C.int(k), C.float(alpha),
		(*C.float)(unsafe.Pointer(pa)), C.int(lda), (*C.float)(unsafe.Pointer(pb)), C.int(ldb),
		C.float(beta), (*C.float)(unsafe.Pointer(&c[0])), C.int(ldc))
}

func cbool(v bool) C.int {
	if v {
		return 1
	}
	return 0
}
