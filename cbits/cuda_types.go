package cbits

import "fmt"

// DevPtr is a device address (CUdeviceptr-sized). 0 is null.
type DevPtr uintptr

// Stream is a cudaStream_t; 0 is the legacy default stream (avoid it: create your own).
type Stream uintptr

// Event is a cudaEvent_t.
type Event uintptr

// Library is a cudaLibrary_t: one loaded CUBIN.
type Library uintptr

// Kernel is a cudaKernel_t: one entry point of a Library.
type Kernel uintptr

// BlasHandle is a cublasHandle_t.
type BlasHandle uintptr

// Device attributes for DeviceAttribute (cudaDeviceAttr values).
const (
	AttrMaxThreadsPerBlock           = 1
	AttrMaxSharedMemoryPerBlock      = 8
	AttrWarpSize                     = 10
	AttrMultiProcessorCount          = 16
	AttrComputeMode                  = 20 // 0 default, 1 exclusive thread, 2 prohibited, 3 exclusive process
	AttrComputeCapabilityMajor       = 75
	AttrComputeCapabilityMinor       = 76
	AttrMaxSharedMemoryPerBlockOptin = 97
)

// CUDA runtime error codes a caller may act on (cudaError_t values).
const (
	ErrInvalidValue         = 1
	ErrMemoryAllocation     = 2
	ErrInvalidConfiguration = 9
	ErrInsufficientDriver   = 35
	ErrDevicesUnavailable   = 46 // exclusive-process compute mode, another process holds the GPU
	ErrNoDevice             = 100
	ErrInvalidDevice        = 101
	ErrNotReady             = 600
	ErrLaunchFailure        = 719
)

// CUDAVersions are the versions of the loaded libraries and where each came from.
type CUDAVersions struct {
	Driver, Runtime        int // cudaDriverGetVersion (0: no driver), cudaRuntimeGetVersion, e.g. 13000
	CUBLAS                 int // major*10000 + minor*100 + patch, e.g. 131000
	NVRTCMajor, NVRTCMinor int
	// Dirs maps each library's soname to the directory it was loaded from
	// (for the loader path and already-loaded libraries, the directory the
	// dynamic loader chose).
	Dirs map[string]string
}

// CUDAError is a failed call into a CUDA library: the call with its main
// arguments, and the library's own name, number and text for the status.
type CUDAError struct {
	Lib     string // "cudart", "cuBLAS", "NVRTC" or "NCCL"
	Call    string // e.g. "cudaMalloc(1048576)"
	Code    int    // the status the library returned
	Name    string // e.g. "cudaErrorMemoryAllocation"
	Message string // e.g. "out of memory"
}

func (e *CUDAError) Error() string {
	if e.Message == "" || e.Message == e.Name {
		return fmt.Sprintf("%s: %s (%d)", e.Call, e.Name, e.Code)
	}
	return fmt.Sprintf("%s: %s (%d): %s", e.Call, e.Name, e.Code, e.Message)
}
