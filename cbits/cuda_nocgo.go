//go:build !cgo

package cbits

import (
	"errors"
	"unsafe"
)

// errNoCgo is every CUDA call's answer in a binary built without cgo.
var errNoCgo = errors.New("load CUDA: binary built without cgo (CGO_ENABLED=0): it cannot dlopen the NVIDIA libraries; rebuild with CGO_ENABLED=1")

// CUDALibs is never loaded without cgo.
type CUDALibs struct{}

// LoadCUDA always fails without cgo.
func LoadCUDA() (*CUDALibs, error) { return nil, errNoCgo }

// LoadCUDAFrom always fails without cgo.
func LoadCUDAFrom(dirs ...string) (*CUDALibs, error) { return nil, errNoCgo }

func (c *CUDALibs) Versions() CUDAVersions                        { return CUDAVersions{} }
func (c *CUDALibs) DeviceCount() (int, error)                     { return 0, errNoCgo }
func (c *CUDALibs) SetDevice(dev int) error                       { return errNoCgo }
func (c *CUDALibs) DeviceAttribute(attr, dev int) (int, error)    { return 0, errNoCgo }
func (c *CUDALibs) MemGetInfo() (free, total uint64, err error)   { return 0, 0, errNoCgo }
func (c *CUDALibs) Malloc(bytes int) (DevPtr, error)              { return 0, errNoCgo }
func (c *CUDALibs) Free(p DevPtr) error                           { return errNoCgo }
func (c *CUDALibs) MallocHost(bytes int) (unsafe.Pointer, error)  { return nil, errNoCgo }
func (c *CUDALibs) FreeHost(p unsafe.Pointer) error               { return errNoCgo }
func (c *CUDALibs) StreamCreate() (Stream, error)                 { return 0, errNoCgo }
func (c *CUDALibs) StreamDestroy(s Stream) error                  { return errNoCgo }
func (c *CUDALibs) StreamSynchronize(s Stream) error              { return errNoCgo }
func (c *CUDALibs) EventCreate() (Event, error)                   { return 0, errNoCgo }
func (c *CUDALibs) EventDestroy(e Event) error                    { return errNoCgo }
func (c *CUDALibs) EventRecord(e Event, s Stream) error           { return errNoCgo }
func (c *CUDALibs) EventQuery(e Event) (bool, error)              { return false, errNoCgo }
func (c *CUDALibs) EventSynchronize(e Event) error                { return errNoCgo }
func (c *CUDALibs) StreamWaitEvent(s Stream, e Event) error       { return errNoCgo }
func (c *CUDALibs) LibraryLoadData(image []byte) (Library, error) { return 0, errNoCgo }
func (c *CUDALibs) LibraryUnload(l Library) error                 { return errNoCgo }
func (c *CUDALibs) DeviceSynchronize() error                      { return errNoCgo }
func (c *CUDALibs) GetLastError() error                           { return errNoCgo }
func (c *CUDALibs) BlasCreate() (BlasHandle, error)               { return 0, errNoCgo }
func (c *CUDALibs) BlasDestroy(h BlasHandle) error                { return errNoCgo }
func (c *CUDALibs) BlasSetStream(h BlasHandle, s Stream) error    { return errNoCgo }
func (c *CUDALibs) BlasSetTF32(h BlasHandle, on bool) error       { return errNoCgo }

func (c *CUDALibs) MemsetAsync(p DevPtr, value byte, bytes int, s Stream) error { return errNoCgo }
func (c *CUDALibs) MemcpyHtoDAsync(dst DevPtr, src unsafe.Pointer, bytes int, s Stream) error {
	return errNoCgo
}
func (c *CUDALibs) MemcpyDtoHAsync(dst unsafe.Pointer, src DevPtr, bytes int, s Stream) error {
	return errNoCgo
}
func (c *CUDALibs) MemcpyDtoDAsync(dst, src DevPtr, bytes int, s Stream) error { return errNoCgo }
func (c *CUDALibs) LibraryGetKernel(l Library, name string) (Kernel, error)    { return 0, errNoCgo }
func (c *CUDALibs) Launch(k Kernel, grid, block [3]uint32, smemBytes int, s Stream, args ...any) error {
	return errNoCgo
}
func (c *CUDALibs) BlasSetWorkspace(h BlasHandle, p DevPtr, bytes int) error { return errNoCgo }
func (c *CUDALibs) Sgemm(h BlasHandle, transA, transB bool, m, n, k int, alpha float32, A DevPtr, lda int,
	B DevPtr, ldb int, beta float32, Cm DevPtr, ldc int) error {
	return errNoCgo
}
func (c *CUDALibs) SgemmStridedBatched(h BlasHandle, transA, transB bool, m, n, k int, alpha float32,
	A DevPtr, lda int, strideA int64, B DevPtr, ldb int, strideB int64, beta float32,
	Cm DevPtr, ldc int, strideC int64, batch int) error {
	return errNoCgo
}
func (c *CUDALibs) GemmEx(h BlasHandle, g Gemm) error { return errNoCgo }
func (c *CUDALibs) Compile(src, name, arch string, opts ...string) ([]byte, string, error) {
	return nil, "", errNoCgo
}

// NCCLLib is never loaded without cgo.
type NCCLLib struct{}

// LoadNCCL always fails without cgo.
func LoadNCCL() (*NCCLLib, error) { return nil, errNoCgo }

// LoadNCCLFrom always fails without cgo.
func LoadNCCLFrom(dirs ...string) (*NCCLLib, error) { return nil, errNoCgo }

func (n *NCCLLib) Version() int          { return 0 }
func (n *NCCLLib) VersionString() string { return "" }
func (n *NCCLLib) Dir() string           { return "" }
