package cbits

// The sonames the CUDA layer loads, and every symbol it resolves in each, in
// the order of the index constants below. Resolving all of them when a
// library is opened turns an old or foreign library into one error naming the
// missing symbol instead of a crash at first use. The lists are plain data so
// that tests can build stub libraries exporting exactly these names.
const (
	sonameCudart   = "libcudart.so.13"
	sonameCublasLt = "libcublasLt.so.13"
	sonameCublas   = "libcublas.so.13"
	sonameNVRTC    = "libnvrtc.so.13"
	sonameNCCL     = "libnccl.so.2"
	// builtinsPattern is NVRTC's run-time builtins library beside libnvrtc.so.13.
	builtinsPattern = "libnvrtc-builtins.so.13.*"
)

// Relative directories of NVIDIA's pip wheels inside a site-packages folder.
const (
	wheelDirCUDA = "nvidia/cu13/lib"
	wheelDirNCCL = "nvidia/nccl/lib"
)

// cudart symbols.
const (
	rtGetDeviceCount = iota
	rtSetDevice
	rtDeviceGetAttribute
	rtMemGetInfo
	rtMalloc
	rtFree
	rtMallocHost
	rtFreeHost
	rtMemsetAsync
	rtMemcpyAsync
	rtStreamCreateWithFlags
	rtStreamDestroy
	rtStreamSynchronize
	rtEventCreateWithFlags
	rtEventDestroy
	rtEventRecord
	rtEventQuery
	rtEventSynchronize
	rtStreamWaitEvent
	rtLibraryLoadData
	rtLibraryUnload
	rtLibraryGetKernel
	rtLaunchKernel
	rtDeviceSynchronize
	rtGetLastError
	rtGetErrorName
	rtGetErrorString
	rtDriverGetVersion
	rtRuntimeGetVersion
	rtCount
)

var cudartSymbols = [rtCount]string{
	rtGetDeviceCount:        "cudaGetDeviceCount",
	rtSetDevice:             "cudaSetDevice",
	rtDeviceGetAttribute:    "cudaDeviceGetAttribute",
	rtMemGetInfo:            "cudaMemGetInfo",
	rtMalloc:                "cudaMalloc",
	rtFree:                  "cudaFree",
	rtMallocHost:            "cudaMallocHost",
	rtFreeHost:              "cudaFreeHost",
	rtMemsetAsync:           "cudaMemsetAsync",
	rtMemcpyAsync:           "cudaMemcpyAsync",
	rtStreamCreateWithFlags: "cudaStreamCreateWithFlags",
	rtStreamDestroy:         "cudaStreamDestroy",
	rtStreamSynchronize:     "cudaStreamSynchronize",
	rtEventCreateWithFlags:  "cudaEventCreateWithFlags",
	rtEventDestroy:          "cudaEventDestroy",
	rtEventRecord:           "cudaEventRecord",
	rtEventQuery:            "cudaEventQuery",
	rtEventSynchronize:      "cudaEventSynchronize",
	rtStreamWaitEvent:       "cudaStreamWaitEvent",
	rtLibraryLoadData:       "cudaLibraryLoadData",
	rtLibraryUnload:         "cudaLibraryUnload",
	rtLibraryGetKernel:      "cudaLibraryGetKernel",
	rtLaunchKernel:          "cudaLaunchKernel",
	rtDeviceSynchronize:     "cudaDeviceSynchronize",
	rtGetLastError:          "cudaGetLastError",
	rtGetErrorName:          "cudaGetErrorName",
	rtGetErrorString:        "cudaGetErrorString",
	rtDriverGetVersion:      "cudaDriverGetVersion",
	rtRuntimeGetVersion:     "cudaRuntimeGetVersion",
}

// cuBLAS symbols (the _v2 names are what cublas_v2.h maps the plain names to).
const (
	blCreate = iota
	blDestroy
	blSetStream
	blSetMathMode
	blSetWorkspace
	blSgemm
	blSgemmStridedBatched
	blGemmEx
	blGemmStridedBatchedEx
	blGetStatusName
	blGetStatusString
	blGetProperty
	blCount
)

var cublasSymbols = [blCount]string{
	blCreate:               "cublasCreate_v2",
	blDestroy:              "cublasDestroy_v2",
	blSetStream:            "cublasSetStream_v2",
	blSetMathMode:          "cublasSetMathMode",
	blSetWorkspace:         "cublasSetWorkspace_v2",
	blSgemm:                "cublasSgemm_v2",
	blSgemmStridedBatched:  "cublasSgemmStridedBatched",
	blGemmEx:               "cublasGemmEx",
	blGemmStridedBatchedEx: "cublasGemmStridedBatchedEx",
	blGetStatusName:        "cublasGetStatusName",
	blGetStatusString:      "cublasGetStatusString",
	blGetProperty:          "cublasGetProperty",
}

// cuBLASLt is loaded only so that cuBLAS finds it; one symbol proves it is cuBLASLt.
var cublasLtSymbols = [...]string{"cublasLtGetVersion"}

// NVRTC symbols.
const (
	nvVersion = iota
	nvGetErrorString
	nvCreateProgram
	nvCompileProgram
	nvDestroyProgram
	nvGetProgramLogSize
	nvGetProgramLog
	nvGetCUBINSize
	nvGetCUBIN
	nvCount
)

var nvrtcSymbols = [nvCount]string{
	nvVersion:           "nvrtcVersion",
	nvGetErrorString:    "nvrtcGetErrorString",
	nvCreateProgram:     "nvrtcCreateProgram",
	nvCompileProgram:    "nvrtcCompileProgram",
	nvDestroyProgram:    "nvrtcDestroyProgram",
	nvGetProgramLogSize: "nvrtcGetProgramLogSize",
	nvGetProgramLog:     "nvrtcGetProgramLog",
	nvGetCUBINSize:      "nvrtcGetCUBINSize",
	nvGetCUBIN:          "nvrtcGetCUBIN",
}

// NCCL symbols: everything the communicator binding uses, resolved when the
// library loads.
const (
	ncGetVersion = iota
	ncGetUniqueID
	ncCommInitRankConfig
	ncSend
	ncRecv
	ncGroupStart
	ncGroupEnd
	ncAllReduce
	ncBroadcast
	ncCommSplit
	ncCommGetAsyncError
	ncCommAbort
	ncCommDestroy
	ncGetErrorString
	ncCount
)

var ncclSymbols = [ncCount]string{
	ncGetVersion:         "ncclGetVersion",
	ncGetUniqueID:        "ncclGetUniqueId",
	ncCommInitRankConfig: "ncclCommInitRankConfig",
	ncSend:               "ncclSend",
	ncRecv:               "ncclRecv",
	ncGroupStart:         "ncclGroupStart",
	ncGroupEnd:           "ncclGroupEnd",
	ncAllReduce:          "ncclAllReduce",
	ncBroadcast:          "ncclBroadcast",
	ncCommSplit:          "ncclCommSplit",
	ncCommGetAsyncError:  "ncclCommGetAsyncError",
	ncCommAbort:          "ncclCommAbort",
	ncCommDestroy:        "ncclCommDestroy",
	ncGetErrorString:     "ncclGetErrorString",
}
