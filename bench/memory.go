package bench

import (
	"unsafe"

	"github.com/pplaunch/pplaunch/collective"
)

// Memory is where a communication benchmark's buffers live: the host's
// (Host: the tcp and in-memory communicators) or a GPU's (OnGPU: nccl). The
// drivers, RunP2P and RunAllReduce, take it as their backend: the rest of
// each is the same for both.
type Memory interface {
	// alloc allocates n elements of dt.
	alloc(dt collective.DType, n int) (region, error)
	// gpu says the buffers are device memory: no plain-socket ceiling
	// measures them, and the report says so.
	gpu() bool
}

// region is one allocation of a Memory.
type region interface {
	buffer() collective.Buffer // the whole region, for the communicator
	write(b []byte) error      // from the host, len(b) bytes at the start
	read(b []byte) error       // to the host, len(b) bytes from the start
	free()
}

// Host is host memory.
var Host Memory = hostMemory{}

// OnGPU is the GPU memory m allocates and copies.
func OnGPU(m DeviceMemory) Memory { return gpuMemory{m} }

type hostMemory struct{}

func (hostMemory) gpu() bool { return false }

func (hostMemory) alloc(dt collective.DType, n int) (region, error) {
	if dt == collective.Float32 {
		return hostRegion{f: make([]float32, n)}, nil
	}
	return hostRegion{b: make([]byte, n)}, nil
}

// hostRegion holds float32 values (f) or bytes (b).
type hostRegion struct {
	f []float32
	b []byte
}

func (r hostRegion) buffer() collective.Buffer {
	if r.f != nil {
		return collective.F32(r.f)
	}
	return collective.Bytes(r.b)
}

func (r hostRegion) bytes() []byte {
	if r.f != nil {
		return unsafeBytes(r.f)
	}
	return r.b
}

func (r hostRegion) write(b []byte) error { copy(r.bytes(), b); return nil }
func (r hostRegion) read(b []byte) error  { copy(b, r.bytes()); return nil }
func (hostRegion) free()                  {}

type gpuMemory struct{ m DeviceMemory }

func (gpuMemory) gpu() bool { return true }

func (g gpuMemory) alloc(dt collective.DType, n int) (region, error) {
	size := n
	if dt == collective.Float32 {
		size = 4 * n
	}
	p, err := g.m.Alloc(max(size, 4)) // never an empty allocation
	if err != nil {
		return nil, err
	}
	return gpuRegion{g.m, p, dt, n}, nil
}

type gpuRegion struct {
	m  DeviceMemory
	p  uintptr
	dt collective.DType
	n  int
}

func (r gpuRegion) buffer() collective.Buffer { return collective.OnDevice(r.dt, r.p, r.n) }
func (r gpuRegion) write(b []byte) error      { return r.m.Upload(r.p, b) }
func (r gpuRegion) read(b []byte) error       { return r.m.Download(b, r.p) }
func (r gpuRegion) free()                     { r.m.Free(r.p) }

// unsafeBytes is x's memory as bytes.
func unsafeBytes(x []float32) []byte {
	if len(x) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&x[0])), 4*len(x))
}
