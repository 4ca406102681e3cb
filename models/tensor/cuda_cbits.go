package tensor

import (
	"fmt"
	"unsafe"

	"github.com/pplaunch/pplaunch/cbits"
)

// cbitsAPI adapts cbits.CUDALibs, the run-time binding of the NVIDIA
// libraries, to cudaAPI.
type cbitsAPI struct{ l *cbits.CUDALibs }

func init() {
	loadCUDA = func() (cudaAPI, error) {
		l, err := cbits.LoadCUDA()
		if err != nil {
			return nil, err
		}
		return cbitsAPI{l}, nil
	}
}

// NewCUDAFrom is NewCUDA with the libraries loaded only from dirs (through
// cbits.LoadCUDAFrom): for tests against the emulator. A process must not load
// both the emulator and the real libraries.
func NewCUDAFrom(dirs []string, device int, opts CUDAOptions) (*CUDA, error) {
	l, err := cbits.LoadCUDAFrom(dirs...)
	if err != nil {
		return nil, fmt.Errorf("cuda backend: %w", err)
	}
	return newCUDAWith(cbitsAPI{l}, device, opts)
}

func (a cbitsAPI) Versions() cudaVersions {
	v := a.l.Versions()
	return cudaVersions{Driver: v.Driver, Runtime: v.Runtime, CUBLAS: v.CUBLAS, NVRTCMajor: v.NVRTCMajor, NVRTCMinor: v.NVRTCMinor}
}
func (a cbitsAPI) DeviceCount() (int, error)                  { return a.l.DeviceCount() }
func (a cbitsAPI) SetDevice(dev int) error                    { return a.l.SetDevice(dev) }
func (a cbitsAPI) DeviceAttribute(attr, dev int) (int, error) { return a.l.DeviceAttribute(attr, dev) }
func (a cbitsAPI) Malloc(bytes int) (devPtr, error) {
	p, err := a.l.Malloc(bytes)
	return devPtr(p), err
}
func (a cbitsAPI) Free(p devPtr) error { return a.l.Free(cbits.DevPtr(p)) }
func (a cbitsAPI) MemsetAsync(p devPtr, value byte, bytes int, s cuStream) error {
	return a.l.MemsetAsync(cbits.DevPtr(p), value, bytes, cbits.Stream(s))
}
func (a cbitsAPI) MemcpyHtoDAsync(dst devPtr, src unsafe.Pointer, bytes int, s cuStream) error {
	return a.l.MemcpyHtoDAsync(cbits.DevPtr(dst), src, bytes, cbits.Stream(s))
}
func (a cbitsAPI) MemcpyDtoHAsync(dst unsafe.Pointer, src devPtr, bytes int, s cuStream) error {
	return a.l.MemcpyDtoHAsync(dst, cbits.DevPtr(src), bytes, cbits.Stream(s))
}
func (a cbitsAPI) MemcpyDtoDAsync(dst, src devPtr, bytes int, s cuStream) error {
	return a.l.MemcpyDtoDAsync(cbits.DevPtr(dst), cbits.DevPtr(src), bytes, cbits.Stream(s))
}
func (a cbitsAPI) StreamCreate() (cuStream, error) {
	s, err := a.l.StreamCreate()
	return cuStream(s), err
}
func (a cbitsAPI) StreamDestroy(s cuStream) error               { return a.l.StreamDestroy(cbits.Stream(s)) }
func (a cbitsAPI) StreamSynchronize(s cuStream) error           { return a.l.StreamSynchronize(cbits.Stream(s)) }
func (a cbitsAPI) MallocHost(bytes int) (unsafe.Pointer, error) { return a.l.MallocHost(bytes) }
func (a cbitsAPI) FreeHost(p unsafe.Pointer) error              { return a.l.FreeHost(p) }
func (a cbitsAPI) EventCreate() (cuEvent, error) {
	e, err := a.l.EventCreate()
	return cuEvent(e), err
}
func (a cbitsAPI) EventDestroy(e cuEvent) error { return a.l.EventDestroy(cbits.Event(e)) }
func (a cbitsAPI) EventRecord(e cuEvent, s cuStream) error {
	return a.l.EventRecord(cbits.Event(e), cbits.Stream(s))
}
func (a cbitsAPI) EventQuery(e cuEvent) (bool, error) { return a.l.EventQuery(cbits.Event(e)) }
func (a cbitsAPI) EventSynchronize(e cuEvent) error   { return a.l.EventSynchronize(cbits.Event(e)) }
func (a cbitsAPI) StreamWaitEvent(s cuStream, e cuEvent) error {
	return a.l.StreamWaitEvent(cbits.Stream(s), cbits.Event(e))
}
func (a cbitsAPI) LibraryLoadData(image []byte) (cuLibrary, error) {
	l, err := a.l.LibraryLoadData(image)
	return cuLibrary(l), err
}
func (a cbitsAPI) LibraryUnload(l cuLibrary) error { return a.l.LibraryUnload(cbits.Library(l)) }
func (a cbitsAPI) LibraryGetKernel(l cuLibrary, name string) (cuKernel, error) {
	k, err := a.l.LibraryGetKernel(cbits.Library(l), name)
	return cuKernel(k), err
}

// Launch converts device pointers to cbits' type; the other arguments pass as they are.
func (a cbitsAPI) Launch(k cuKernel, grid, block [3]uint32, smemBytes int, s cuStream, args ...any) error {
	for i, v := range args {
		if p, ok := v.(devPtr); ok {
			args[i] = cbits.DevPtr(p)
		}
	}
	return a.l.Launch(cbits.Kernel(k), grid, block, smemBytes, cbits.Stream(s), args...)
}
func (a cbitsAPI) BlasCreate() (blasHandle, error) {
	h, err := a.l.BlasCreate()
	return blasHandle(h), err
}
func (a cbitsAPI) BlasDestroy(h blasHandle) error { return a.l.BlasDestroy(cbits.BlasHandle(h)) }
func (a cbitsAPI) BlasSetStream(h blasHandle, s cuStream) error {
	return a.l.BlasSetStream(cbits.BlasHandle(h), cbits.Stream(s))
}
func (a cbitsAPI) BlasSetTF32(h blasHandle, on bool) error {
	return a.l.BlasSetTF32(cbits.BlasHandle(h), on)
}
func (a cbitsAPI) BlasSetWorkspace(h blasHandle, p devPtr, bytes int) error {
	return a.l.BlasSetWorkspace(cbits.BlasHandle(h), cbits.DevPtr(p), bytes)
}
func (a cbitsAPI) Sgemm(h blasHandle, transA, transB bool, m, n, k int, alpha float32, A devPtr, lda int,
	B devPtr, ldb int, beta float32, C devPtr, ldc int) error {
	return a.l.Sgemm(cbits.BlasHandle(h), transA, transB, m, n, k, alpha, cbits.DevPtr(A), lda, cbits.DevPtr(B), ldb, beta, cbits.DevPtr(C), ldc)
}
func (a cbitsAPI) SgemmStridedBatched(h blasHandle, transA, transB bool, m, n, k int, alpha float32,
	A devPtr, lda int, strideA int64, B devPtr, ldb int, strideB int64, beta float32,
	C devPtr, ldc int, strideC int64, batch int) error {
	return a.l.SgemmStridedBatched(cbits.BlasHandle(h), transA, transB, m, n, k, alpha, cbits.DevPtr(A), lda, strideA,
		cbits.DevPtr(B), ldb, strideB, beta, cbits.DevPtr(C), ldc, strideC, batch)
}
func (a cbitsAPI) GemmEx(h blasHandle, g cbits.Gemm) error { return a.l.GemmEx(cbits.BlasHandle(h), g) }
func (a cbitsAPI) Compile(src, name, arch string, opts ...string) ([]byte, string, error) {
	return a.l.Compile(src, name, arch, opts...)
}

// CUDADevices loads the NVIDIA libraries as NewCUDA does and returns how many
// GPUs are visible. Without one, the error says what is missing (a library,
// naming every place looked at; the driver; a GPU) and, once the runtime is
// loaded, the directory it came from.
func CUDADevices() (int, error) {
	l, err := cbits.LoadCUDA()
	if err != nil {
		return 0, err
	}
	n, err := l.DeviceCount()
	if err != nil {
		v := l.Versions()
		dir := v.Dirs["libcudart.so.13"]
		if dir == "" {
			dir = "the loader's search path"
		}
		return 0, fmt.Errorf("%w (CUDA runtime %d.%d from %s)", err, v.Runtime/1000, v.Runtime%1000/10, dir)
	}
	return n, nil
}
