//go:build cgo

package cbits

/*
#include <stddef.h>
#include <stdlib.h>
static const char *pp_nv_s(void *f, int st) { return ((const char *(*)(int))f)(st); }
static int pp_nv_create(void *f, void **prog, const char *src, const char *name) {
	return ((int (*)(void **, const char *, const char *, int, const char *const *, const char *const *))f)(
		prog, src, name, 0, 0, 0);
}
static int pp_nv_compile(void *f, void *prog, int n, char **opts) {
	return ((int (*)(void *, int, const char *const *))f)(prog, n, (const char *const *)opts);
}
static int pp_nv_destroy(void *f, void **prog) { return ((int (*)(void **))f)(prog); }
static int pp_nv_size(void *f, void *prog, size_t *n) { return ((int (*)(void *, size_t *))f)(prog, n); }
static int pp_nv_get(void *f, void *prog, char *buf) { return ((int (*)(void *, char *))f)(prog, buf); }
static char **pp_nv_argv(int n) { return (char **)calloc(n > 0 ? n : 1, sizeof(char *)); }
static void pp_nv_argset(char **v, int i, char *s) { v[i] = s; }
*/
import "C"

import (
	"fmt"
	"regexp"
	"strings"
	"sync"
	"unsafe"
)

// archRE is compiled at the first Compile, not at every process's start.
var archRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^sm_[0-9]+[af]?$`) })

// nvrtcErr is the error for an NVRTC status, with NVRTC's name for it.
func (c *CUDALibs) nvrtcErr(st C.int, call, log string) error {
	if st == 0 {
		return nil
	}
	name := C.GoString(C.pp_nv_s(c.nv[nvGetErrorString], st))
	err := &CUDAError{Lib: "NVRTC", Call: call, Code: int(st), Name: name}
	if log = strings.TrimSpace(log); log != "" {
		return fmt.Errorf("%w\n%s", err, log)
	}
	return err
}

// Compile builds src (one translation unit, no #include) to CUBIN for arch
// (e.g. "sm_90"); opts are extra NVRTC options. The log is NVRTC's program log
// (warnings, and with "--ptxas-options=-v" registers and spills). A compile
// error is an error that includes the log.
func (c *CUDALibs) Compile(src, name, arch string, opts ...string) (cubin []byte, log string, err error) {
	if !archRE().MatchString(arch) {
		return nil, "", fmt.Errorf("nvrtc compile %s: arch %q is not a real GPU architecture like sm_90 (CUBIN, not PTX, is built)", name, arch)
	}
	csrc, cname := C.CString(src), C.CString(name)
	defer C.free(unsafe.Pointer(csrc))
	defer C.free(unsafe.Pointer(cname))
	var prog unsafe.Pointer
	if st := C.pp_nv_create(c.nv[nvCreateProgram], &prog, csrc, cname); st != 0 {
		return nil, "", c.nvrtcErr(st, fmt.Sprintf("nvrtcCreateProgram(%s)", name), "")
	}
	defer C.pp_nv_destroy(c.nv[nvDestroyProgram], &prog)

	all := append([]string{"--gpu-architecture=" + arch}, opts...)
	argv := C.pp_nv_argv(C.int(len(all)))
	defer C.free(unsafe.Pointer(argv))
	for i, o := range all {
		co := C.CString(o)
		defer C.free(unsafe.Pointer(co))
		C.pp_nv_argset(argv, C.int(i), co)
	}
	st := C.pp_nv_compile(c.nv[nvCompileProgram], prog, C.int(len(all)), argv)
	log, lerr := c.programLog(prog)
	call := fmt.Sprintf("nvrtcCompileProgram(%s, %s)", name, strings.Join(all, " "))
	if st != 0 {
		return nil, log, c.nvrtcErr(st, call, log)
	}
	if lerr != nil {
		return nil, "", lerr
	}
	var n C.size_t
	if st := C.pp_nv_size(c.nv[nvGetCUBINSize], prog, &n); st != 0 {
		return nil, log, c.nvrtcErr(st, fmt.Sprintf("nvrtcGetCUBINSize(%s)", name), "")
	}
	if n == 0 {
		return nil, log, fmt.Errorf("nvrtcGetCUBIN(%s): NVRTC built no CUBIN for %s", name, arch)
	}
	buf := C.malloc(n)
	defer C.free(buf)
	if st := C.pp_nv_get(c.nv[nvGetCUBIN], prog, (*C.char)(buf)); st != 0 {
		return nil, log, c.nvrtcErr(st, fmt.Sprintf("nvrtcGetCUBIN(%s)", name), "")
	}
	return C.GoBytes(buf, C.int(n)), log, nil
}

// programLog is the program's log without its terminating NUL.
func (c *CUDALibs) programLog(prog unsafe.Pointer) (string, error) {
	var n C.size_t
	if st := C.pp_nv_size(c.nv[nvGetProgramLogSize], prog, &n); st != 0 {
		return "", c.nvrtcErr(st, "nvrtcGetProgramLogSize", "")
	}
	if n <= 1 {
		return "", nil
	}
	buf := C.malloc(n)
	defer C.free(buf)
	if st := C.pp_nv_get(c.nv[nvGetProgramLog], prog, (*C.char)(buf)); st != 0 {
		return "", c.nvrtcErr(st, "nvrtcGetProgramLog", "")
	}
	return strings.TrimRight(C.GoStringN((*C.char)(buf), C.int(n)), "\x00"), nil
}
