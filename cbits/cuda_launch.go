//go:build cgo

package cbits

/*
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
static int pp_unload(void *f, size_t h) { return ((int (*)(void *))f)((void *)h); }

// pp_dim3 has dim3's layout: three unsigned ints, passed by value.
typedef struct { unsigned x, y, z; } pp_dim3;

#define PP_MAX_ARGS 64

static int pp_lib_load(void *f, size_t *lib, const void *code) {
	return ((int (*)(size_t *, const void *, void *, void **, unsigned, void *, void **, unsigned))f)(
		lib, code, 0, 0, 0, 0, 0, 0);
}
static int pp_get_kernel(void *f, size_t *k, size_t lib, const char *name) {
	return ((int (*)(size_t *, void *, const char *))f)(k, (void *)lib, name);
}
// pp_launch builds the void** array cudaLaunchKernel wants: args[i] points at
// slot i, which holds the i-th argument's bytes (little-endian, 8-byte slots).
// A null pointer ends the array: CUDA reads only as many entries as the
// kernel has parameters, and the emulator checks the count with it.
static int pp_launch(void *f, size_t k, unsigned gx, unsigned gy, unsigned gz,
		unsigned bx, unsigned by, unsigned bz, size_t smem, size_t stream, int n, uint64_t *slots) {
	void *args[PP_MAX_ARGS + 1];
	for (int i = 0; i < n; i++) args[i] = &slots[i];
	args[n] = 0;
	pp_dim3 g = {gx, gy, gz}, b = {bx, by, bz};
	return ((int (*)(const void *, pp_dim3, pp_dim3, void **, size_t, void *))f)(
		(const void *)k, g, b, args, smem, (void *)stream);
}
*/
import "C"

import (
	"errors"
	"fmt"
	"math"
	"unsafe"
)

// maxLaunchArgs is the most kernel arguments Launch passes.
const maxLaunchArgs = C.PP_MAX_ARGS

// LibraryLoadData loads a CUBIN (from Compile) into the current context.
func (c *CUDALibs) LibraryLoadData(image []byte) (Library, error) {
	if len(image) == 0 {
		return 0, errors.New("cudaLibraryLoadData: empty image")
	}
	var l C.size_t
	// The runtime copies the image before returning; Go memory is fine here.
	rc := C.pp_lib_load(c.rt[rtLibraryLoadData], &l, unsafe.Pointer(&image[0]))
	return Library(l), c.rtErr(rc, fmt.Sprintf("cudaLibraryLoadData(%d bytes)", len(image)))
}

// LibraryUnload unloads l; its kernels are invalid afterwards.
func (c *CUDALibs) LibraryUnload(l Library) error {
	return c.rtErr(C.pp_unload(c.rt[rtLibraryUnload], C.size_t(l)), fmt.Sprintf("cudaLibraryUnload(%#x)", uintptr(l)))
}

// LibraryGetKernel finds the extern "C" kernel name in l.
func (c *CUDALibs) LibraryGetKernel(l Library, name string) (Kernel, error) {
	cname := C.CString(name)
	defer C.free(unsafe.Pointer(cname))
	var k C.size_t
	rc := C.pp_get_kernel(c.rt[rtLibraryGetKernel], &k, C.size_t(l), cname)
	return Kernel(k), c.rtErr(rc, fmt.Sprintf("cudaLibraryGetKernel(%q)", name))
}

// Launch calls cudaLaunchKernel(k, grid, block, args, smemBytes, s). Each arg
// is one of DevPtr, int32, uint32, int64 or float32, matching the kernel's
// parameter (a pointer, int, unsigned, long long or float); anything else is
// an error before anything is launched.
func (c *CUDALibs) Launch(k Kernel, grid, block [3]uint32, smemBytes int, s Stream, args ...any) error {
	if len(args) > maxLaunchArgs {
		return fmt.Errorf("cudaLaunchKernel: %d arguments, at most %d", len(args), maxLaunchArgs)
	}
	if smemBytes < 0 {
		return fmt.Errorf("cudaLaunchKernel: negative shared memory size %d", smemBytes)
	}
	var slots [maxLaunchArgs]C.uint64_t
	for i, a := range args {
		switch v := a.(type) {
		case DevPtr:
			slots[i] = C.uint64_t(v)
		case int32:
			slots[i] = C.uint64_t(uint32(v))
		case uint32:
			slots[i] = C.uint64_t(v)
		case int64:
			slots[i] = C.uint64_t(v)
		case float32:
			slots[i] = C.uint64_t(math.Float32bits(v))
		default:
			return fmt.Errorf("cudaLaunchKernel: argument %d is %T; pass DevPtr, int32, uint32, int64 or float32", i, a)
		}
	}
	rc := C.pp_launch(c.rt[rtLaunchKernel], C.size_t(k), C.uint(grid[0]), C.uint(grid[1]), C.uint(grid[2]),
		C.uint(block[0]), C.uint(block[1]), C.uint(block[2]), C.size_t(smemBytes), C.size_t(s),
		C.int(len(args)), &slots[0])
	if rc != 0 {
		return c.rtErr(rc, fmt.Sprintf("cudaLaunchKernel(grid %v, block %v, %d B shared, %d args)", grid, block, smemBytes, len(args)))
	}
	return nil
}
