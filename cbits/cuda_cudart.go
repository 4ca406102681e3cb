//go:build cgo

package cbits

/*
#include <stddef.h>
typedef void *pp_p;
static int pp_i_p(void *f, void *a) { return ((int (*)(void *))f)(a); }
static int pp_i_i(void *f, int a) { return ((int (*)(int))f)(a); }
static int pp_i_v(void *f) { return ((int (*)(void))f)(); }
static int pp_i_pp(void *f, void *a, void *b) { return ((int (*)(void *, void *))f)(a, b); }
static const char *pp_s_i(void *f, int e) { return ((const char *(*)(int))f)(e); }
static int pp_count(void *f, int *n) { return ((int (*)(int *))f)(n); }
static int pp_attr(void *f, int *v, int attr, int dev) { return ((int (*)(int *, int, int))f)(v, attr, dev); }
static int pp_meminfo(void *f, size_t *fr, size_t *to) { return ((int (*)(size_t *, size_t *))f)(fr, to); }
static int pp_alloc(void *f, void **p, size_t n) { return ((int (*)(void **, size_t))f)(p, n); }
static int pp_memset(void *f, size_t p, int v, size_t n, size_t s) {
	return ((int (*)(void *, int, size_t, void *))f)((void *)p, v, n, (void *)s);
}
static int pp_memcpy(void *f, size_t d, size_t s, size_t n, int kind, size_t st) {
	return ((int (*)(void *, const void *, size_t, int, void *))f)((void *)d, (const void *)s, n, kind, (void *)st);
}
static int pp_memcpy_h(void *f, size_t d, const void *s, size_t n, int kind, size_t st) {
	return ((int (*)(void *, const void *, size_t, int, void *))f)((void *)d, s, n, kind, (void *)st);
}
static int pp_memcpy_d(void *f, void *d, size_t s, size_t n, int kind, size_t st) {
	return ((int (*)(void *, const void *, size_t, int, void *))f)(d, (const void *)s, n, kind, (void *)st);
}
static int pp_create(void *f, size_t *h, unsigned flags) { return ((int (*)(size_t *, unsigned))f)(h, flags); }
static int pp_h(void *f, size_t h) { return ((int (*)(void *))f)((void *)h); }
static int pp_hh(void *f, size_t a, size_t b) { return ((int (*)(void *, void *))f)((void *)a, (void *)b); }
static int pp_hhu(void *f, size_t a, size_t b, unsigned u) { return ((int (*)(void *, void *, unsigned))f)((void *)a, (void *)b, u); }
*/
import "C"

import (
	"fmt"
	"os"
	"unsafe"
)

// Flags the binding passes.
const (
	streamNonBlocking    = 0x01 // cudaStreamNonBlocking
	eventDisableTiming   = 0x02 // cudaEventDisableTiming
	memcpyHostToDevice   = 1
	memcpyDeviceToHost   = 2
	memcpyDeviceToDevice = 3
)

// rtErr is the error for a cudart status: the call, the runtime's name for the
// code, the code and the runtime's description.
func (c *CUDALibs) rtErr(rc C.int, call string) error {
	if rc == 0 {
		return nil
	}
	return &CUDAError{Lib: "cudart", Call: call, Code: int(rc),
		Name:    C.GoString(C.pp_s_i(c.rt[rtGetErrorName], rc)),
		Message: C.GoString(C.pp_s_i(c.rt[rtGetErrorString], rc))}
}

// DeviceCount returns the number of visible GPUs, or an error that says why
// there are none: no driver (35), no device (100), or none visible.
func (c *CUDALibs) DeviceCount() (int, error) {
	var n C.int
	rc := C.pp_count(c.rt[rtGetDeviceCount], &n)
	vis := ""
	if v, ok := os.LookupEnv("CUDA_VISIBLE_DEVICES"); ok {
		vis = fmt.Sprintf("; CUDA_VISIBLE_DEVICES=%q", v)
	}
	switch {
	case rc == ErrInsufficientDriver:
		return 0, fmt.Errorf("no NVIDIA driver (cudaErrorInsufficientDriver 35: libcuda.so.1 is missing, or its driver is older than CUDA %s needs): %w",
			runtimeString(c.versions.Runtime), c.rtErr(rc, "cudaGetDeviceCount"))
	case rc == ErrNoDevice:
		return 0, fmt.Errorf("no CUDA device (cudaErrorNoDevice 100: the driver sees no GPU%s): %w", vis, c.rtErr(rc, "cudaGetDeviceCount"))
	case rc != 0:
		return 0, c.rtErr(rc, "cudaGetDeviceCount")
	case n == 0:
		return 0, fmt.Errorf("no CUDA device: cudaGetDeviceCount found 0%s", vis)
	}
	return int(n), nil
}

// runtimeString writes 13000 as "13.0".
func runtimeString(v int) string { return fmt.Sprintf("%d.%d", v/1000, v%1000/10) }

// SetDevice makes dev the calling thread's current device.
func (c *CUDALibs) SetDevice(dev int) error {
	return c.rtErr(C.pp_i_i(c.rt[rtSetDevice], C.int(dev)), fmt.Sprintf("cudaSetDevice(%d)", dev))
}

// DeviceAttribute is cudaDeviceGetAttribute(attr, dev).
func (c *CUDALibs) DeviceAttribute(attr, dev int) (int, error) {
	var v C.int
	rc := C.pp_attr(c.rt[rtDeviceGetAttribute], &v, C.int(attr), C.int(dev))
	return int(v), c.rtErr(rc, fmt.Sprintf("cudaDeviceGetAttribute(%d, %d)", attr, dev))
}

// MemGetInfo is the current device's free and total memory.
func (c *CUDALibs) MemGetInfo() (free, total uint64, err error) {
	var f, t C.size_t
	rc := C.pp_meminfo(c.rt[rtMemGetInfo], &f, &t)
	return uint64(f), uint64(t), c.rtErr(rc, "cudaMemGetInfo")
}

// Malloc allocates device memory.
func (c *CUDALibs) Malloc(bytes int) (DevPtr, error) {
	if bytes < 0 {
		return 0, fmt.Errorf("cudaMalloc(%d): negative size", bytes)
	}
	var p unsafe.Pointer
	rc := C.pp_alloc(c.rt[rtMalloc], &p, C.size_t(bytes))
	return DevPtr(p), c.rtErr(rc, fmt.Sprintf("cudaMalloc(%d)", bytes))
}

// Free releases device memory from Malloc.
func (c *CUDALibs) Free(p DevPtr) error {
	return c.rtErr(C.pp_h(c.rt[rtFree], C.size_t(p)), fmt.Sprintf("cudaFree(%#x)", uintptr(p)))
}

// MallocHost allocates pinned host memory (for truly asynchronous copies).
func (c *CUDALibs) MallocHost(bytes int) (unsafe.Pointer, error) {
	if bytes < 0 {
		return nil, fmt.Errorf("cudaMallocHost(%d): negative size", bytes)
	}
	var p unsafe.Pointer
	rc := C.pp_alloc(c.rt[rtMallocHost], &p, C.size_t(bytes))
	return p, c.rtErr(rc, fmt.Sprintf("cudaMallocHost(%d)", bytes))
}

// FreeHost releases memory from MallocHost.
func (c *CUDALibs) FreeHost(p unsafe.Pointer) error {
	return c.rtErr(C.pp_i_p(c.rt[rtFreeHost], p), fmt.Sprintf("cudaFreeHost(%p)", p))
}

// MemsetAsync sets bytes bytes at p to value, in stream order.
func (c *CUDALibs) MemsetAsync(p DevPtr, value byte, bytes int, s Stream) error {
	rc := C.pp_memset(c.rt[rtMemsetAsync], C.size_t(p), C.int(value), C.size_t(bytes), C.size_t(s))
	return c.rtErr(rc, fmt.Sprintf("cudaMemsetAsync(%#x, %d, %d)", uintptr(p), value, bytes))
}

// MemcpyHtoDAsync copies bytes from host src to device dst in stream order.
// src must stay valid until the stream reaches the copy; with pageable
// memory the runtime stages it, with MallocHost memory the copy is truly
// asynchronous.
func (c *CUDALibs) MemcpyHtoDAsync(dst DevPtr, src unsafe.Pointer, bytes int, s Stream) error {
	rc := C.pp_memcpy_h(c.rt[rtMemcpyAsync], C.size_t(dst), src, C.size_t(bytes), memcpyHostToDevice, C.size_t(s))
	return c.rtErr(rc, fmt.Sprintf("cudaMemcpyAsync(%#x <- host %p, %d, HostToDevice)", uintptr(dst), src, bytes))
}

// MemcpyDtoHAsync copies bytes from device src to host dst in stream order;
// dst holds the data once the stream has passed the copy.
func (c *CUDALibs) MemcpyDtoHAsync(dst unsafe.Pointer, src DevPtr, bytes int, s Stream) error {
	rc := C.pp_memcpy_d(c.rt[rtMemcpyAsync], dst, C.size_t(src), C.size_t(bytes), memcpyDeviceToHost, C.size_t(s))
	return c.rtErr(rc, fmt.Sprintf("cudaMemcpyAsync(host %p <- %#x, %d, DeviceToHost)", dst, uintptr(src), bytes))
}

// MemcpyDtoDAsync copies bytes between device buffers in stream order.
func (c *CUDALibs) MemcpyDtoDAsync(dst, src DevPtr, bytes int, s Stream) error {
	rc := C.pp_memcpy(c.rt[rtMemcpyAsync], C.size_t(dst), C.size_t(src), C.size_t(bytes), memcpyDeviceToDevice, C.size_t(s))
	return c.rtErr(rc, fmt.Sprintf("cudaMemcpyAsync(%#x <- %#x, %d, DeviceToDevice)", uintptr(dst), uintptr(src), bytes))
}

// StreamCreate creates a stream that does not synchronise with the legacy
// default stream.
func (c *CUDALibs) StreamCreate() (Stream, error) {
	var h C.size_t
	rc := C.pp_create(c.rt[rtStreamCreateWithFlags], &h, streamNonBlocking)
	return Stream(h), c.rtErr(rc, "cudaStreamCreateWithFlags(non-blocking)")
}

// StreamDestroy destroys s (work already queued still completes).
func (c *CUDALibs) StreamDestroy(s Stream) error {
	return c.rtErr(C.pp_h(c.rt[rtStreamDestroy], C.size_t(s)), fmt.Sprintf("cudaStreamDestroy(%#x)", uintptr(s)))
}

// StreamSynchronize waits until everything queued on s is done.
func (c *CUDALibs) StreamSynchronize(s Stream) error {
	return c.rtErr(C.pp_h(c.rt[rtStreamSynchronize], C.size_t(s)), fmt.Sprintf("cudaStreamSynchronize(%#x)", uintptr(s)))
}

// EventCreate creates an event without timing (the cheap kind, for ordering).
func (c *CUDALibs) EventCreate() (Event, error) {
	var h C.size_t
	rc := C.pp_create(c.rt[rtEventCreateWithFlags], &h, eventDisableTiming)
	return Event(h), c.rtErr(rc, "cudaEventCreateWithFlags(disable-timing)")
}

// EventDestroy destroys e.
func (c *CUDALibs) EventDestroy(e Event) error {
	return c.rtErr(C.pp_h(c.rt[rtEventDestroy], C.size_t(e)), fmt.Sprintf("cudaEventDestroy(%#x)", uintptr(e)))
}

// EventRecord records e at the current end of s.
func (c *CUDALibs) EventRecord(e Event, s Stream) error {
	rc := C.pp_hh(c.rt[rtEventRecord], C.size_t(e), C.size_t(s))
	return c.rtErr(rc, fmt.Sprintf("cudaEventRecord(%#x, stream %#x)", uintptr(e), uintptr(s)))
}

// EventQuery says whether the work before e's record is done.
func (c *CUDALibs) EventQuery(e Event) (bool, error) {
	rc := C.pp_h(c.rt[rtEventQuery], C.size_t(e))
	if rc == ErrNotReady {
		return false, nil
	}
	return rc == 0, c.rtErr(rc, fmt.Sprintf("cudaEventQuery(%#x)", uintptr(e)))
}

// EventSynchronize waits for e.
func (c *CUDALibs) EventSynchronize(e Event) error {
	return c.rtErr(C.pp_h(c.rt[rtEventSynchronize], C.size_t(e)), fmt.Sprintf("cudaEventSynchronize(%#x)", uintptr(e)))
}

// StreamWaitEvent makes later work on s wait for e.
func (c *CUDALibs) StreamWaitEvent(s Stream, e Event) error {
	rc := C.pp_hhu(c.rt[rtStreamWaitEvent], C.size_t(s), C.size_t(e), 0)
	return c.rtErr(rc, fmt.Sprintf("cudaStreamWaitEvent(stream %#x, %#x)", uintptr(s), uintptr(e)))
}

// DeviceSynchronize waits until the device is idle.
func (c *CUDALibs) DeviceSynchronize() error {
	return c.rtErr(C.pp_i_v(c.rt[rtDeviceSynchronize]), "cudaDeviceSynchronize")
}

// GetLastError returns and clears the runtime's last error.
func (c *CUDALibs) GetLastError() error {
	return c.rtErr(C.pp_i_v(c.rt[rtGetLastError]), "cudaGetLastError")
}
