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

// DataType is a cudaDataType_t: how a GemmEx operand stores its elements.
type DataType int

// The operand types GemmEx passes.
const (
	DataFloat32  DataType = 0  // CUDA_R_32F
	DataBFloat16 DataType = 14 // CUDA_R_16BF
)

func (d DataType) String() string {
	switch d {
	case DataFloat32:
		return "CUDA_R_32F"
	case DataBFloat16:
		return "CUDA_R_16BF"
	}
	return fmt.Sprintf("cudaDataType(%d)", int(d))
}

// GemmOperand is one matrix of a GemmEx call: its address, element type,
// leading dimension and (batched) stride in elements.
type GemmOperand struct {
	Ptr    DevPtr
	Type   DataType
	LD     int
	Stride int64
}

// Gemm is one column-major product C = Alpha·op(A)·op(B) + Beta·C, C M×N,
// op(A) M×K, op(B) K×N, computed in float32 (CUBLAS_COMPUTE_32F) whatever
// the operands' types; Batch > 1 makes it Batch products, the i-th on each
// operand's Ptr + i·Stride.
type Gemm struct {
	TransA, TransB bool
	M, N, K        int
	Alpha, Beta    float32
	A, B, C        GemmOperand
	Batch          int
}

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
