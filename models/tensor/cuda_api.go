package tensor

import (
	"unsafe"

	"github.com/pplaunch/pplaunch/cbits"
)

// The CUDA backend calls the NVIDIA libraries through cudaAPI, the subset of
// cbits.CUDALibs it uses, with cbits' handle types mirrored here; cuda_cbits.go
// adapts the real binding. Every method must be called from the device's own
// locked OS thread (device.call guarantees it).
type (
	devPtr     uintptr
	cuStream   uintptr
	cuLibrary  uintptr
	cuKernel   uintptr
	blasHandle uintptr
	cuEvent    uintptr
)

// cudaVersions are the loaded libraries' versions, for the kernel cache key
// and for messages.
type cudaVersions struct {
	Driver, Runtime, CUBLAS, NVRTCMajor, NVRTCMinor int
}

// Device attributes (cudaDeviceAttr values).
const (
	attrMultiProcessorCount    = 16
	attrComputeCapabilityMajor = 75
	attrComputeCapabilityMinor = 76
)

type cudaAPI interface {
	Versions() cudaVersions
	DeviceCount() (int, error)
	SetDevice(dev int) error
	DeviceAttribute(attr, dev int) (int, error)
	Malloc(bytes int) (devPtr, error)
	Free(p devPtr) error
	MemsetAsync(p devPtr, value byte, bytes int, s cuStream) error
	MemcpyHtoDAsync(dst devPtr, src unsafe.Pointer, bytes int, s cuStream) error
	MemcpyDtoHAsync(dst unsafe.Pointer, src devPtr, bytes int, s cuStream) error
	MemcpyDtoDAsync(dst, src devPtr, bytes int, s cuStream) error
	StreamCreate() (cuStream, error)
	StreamDestroy(s cuStream) error
	StreamSynchronize(s cuStream) error
	MallocHost(bytes int) (unsafe.Pointer, error)
	FreeHost(p unsafe.Pointer) error
	EventCreate() (cuEvent, error)
	EventDestroy(e cuEvent) error
	EventRecord(e cuEvent, s cuStream) error
	EventQuery(e cuEvent) (done bool, err error)
	EventSynchronize(e cuEvent) error
	StreamWaitEvent(s cuStream, e cuEvent) error
	LibraryLoadData(image []byte) (cuLibrary, error)
	LibraryUnload(l cuLibrary) error
	LibraryGetKernel(l cuLibrary, name string) (cuKernel, error)
	Launch(k cuKernel, grid, block [3]uint32, smemBytes int, s cuStream, args ...any) error
	BlasCreate() (blasHandle, error)
	BlasDestroy(h blasHandle) error
	BlasSetStream(h blasHandle, s cuStream) error
	BlasSetTF32(h blasHandle, on bool) error
	BlasSetWorkspace(h blasHandle, p devPtr, bytes int) error
	Sgemm(h blasHandle, transA, transB bool, m, n, k int, alpha float32, A devPtr, lda int,
		B devPtr, ldb int, beta float32, C devPtr, ldc int) error
	SgemmStridedBatched(h blasHandle, transA, transB bool, m, n, k int, alpha float32,
		A devPtr, lda int, strideA int64, B devPtr, ldb int, strideB int64, beta float32,
		C devPtr, ldc int, strideC int64, batch int) error
	// GemmEx is a column-major product with operands of their own types,
	// accumulated in float32 (cbits.CUDALibs.GemmEx).
	GemmEx(h blasHandle, g cbits.Gemm) error
	Compile(src, name, arch string, opts ...string) (cubin []byte, log string, err error)
}
