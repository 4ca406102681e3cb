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
typedef void (*pp_void_fn)(void);
static void pp_call(void *fn) { ((pp_void_fn)fn)(); }
// pp_cpu_level is CPULevel's input: 3 AVX-512 (F, BW, VL, DQ), 2 AVX2 and
// FMA, 1 AVX, 0 otherwise.
static int pp_cpu_level(void) {
#if defined(__x86_64__)
	__builtin_cpu_init();
	if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
	    __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq"))
		return 3;
	if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
		return 2;
	if (__builtin_cpu_supports("avx"))
		return 1;
#endif
	return 0;
}
static void pp_setenv(const char *k, const char *v) { setenv(k, v, 1); }
static int pp_hasenv(const char *k) { return getenv(k) != NULL; }
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
	note   string // set when pplaunch chose the core: what and why
	sgemm  unsafe.Pointer
	lib    *library
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
	lib, err := open(soname)
	if err != nil {
		return nil, fmt.Errorf("load OpenBLAS: %w", err)
	}
	if _, err := lib.sym("openblas_get_config"); err != nil {
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
	o := &OpenBLAS{sgemm: sgemm, lib: lib}
	o.config = o.readConfig()
	o.fixCore()
	C.pp_set_threads(threads, 1)
	return o, nil
}

// fixCore checks the kernels OpenBLAS picked from CPUID when it loaded and,
// where they are narrower than the CPU allows (CoreFix), picks them again
// with OPENBLAS_CORETYPE set. A core the user named is kept, as is a build
// for one core (no gotoblas_dynamic_init to pick again).
func (o *OpenBLAS) fixCore() {
	key := C.CString("OPENBLAS_CORETYPE")
	defer C.free(unsafe.Pointer(key))
	if C.pp_hasenv(key) != 0 {
		return
	}
	force, note := CoreFix(o.coreName(), int(C.pp_cpu_level()))
	if force == "" {
		return
	}
	if err := o.reselect(force); err != nil {
		o.note = note + ", but " + err.Error()
		return
	}
	o.note = fmt.Sprintf("%s (now %s)", note, o.coreName())
}

// reselect makes OpenBLAS pick its kernels again for the named core, as it
// does when it loads: OPENBLAS_CORETYPE in the C environment (which OpenBLAS
// reads; Go's, and so that of the processes Go starts, keeps the user's),
// then gotoblas_dynamic_quit and gotoblas_dynamic_init.
func (o *OpenBLAS) reselect(core string) error {
	quit, err := o.lib.sym("gotoblas_dynamic_quit")
	if err != nil {
		return fmt.Errorf("this OpenBLAS cannot pick its kernels again: %w", err)
	}
	initFn, err := o.lib.sym("gotoblas_dynamic_init")
	if err != nil {
		return fmt.Errorf("this OpenBLAS cannot pick its kernels again: %w", err)
	}
	k, v := C.CString("OPENBLAS_CORETYPE"), C.CString(core)
	defer C.free(unsafe.Pointer(k))
	defer C.free(unsafe.Pointer(v))
	C.pp_setenv(k, v)
	C.pp_call(quit)
	C.pp_call(initFn)
	o.config = o.readConfig()
	return nil
}

// coreName is the core OpenBLAS runs kernels for, e.g. "Cooperlake"; "" for
// a build without openblas_get_corename.
func (o *OpenBLAS) coreName() string {
	fn, err := o.lib.sym("openblas_get_corename")
	if err != nil {
		return ""
	}
	return C.GoString(C.pp_config(fn))
}

func (o *OpenBLAS) readConfig() string {
	fn, _ := o.lib.sym("openblas_get_config")
	return C.GoString(C.pp_config(fn))
}

// Note says, where pplaunch chose OpenBLAS's core because OpenBLAS's own
// detection took narrower kernels than the CPU runs, what it did; else "".
func (o *OpenBLAS) Note() string { return o.note }

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
