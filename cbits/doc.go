// Package cbits is a small cgo shim that dlopens native libraries at run time,
// so one binary builds with only cgo and -ldl and runs on machines with or
// without them. It loads:
//
//   - OpenBLAS, for the CPU backend (checked to be OpenBLAS, held
//     single-threaded, its kernels chosen from the CPU's features unless the
//     user set OPENBLAS_CORETYPE);
//   - NVIDIA's CUDA 13 runtime, cuBLAS (with cuBLASLt) and NVRTC, for the CUDA
//     backend (LoadCUDA), and NCCL (LoadNCCL). No CUDA header is used: the
//     shim declares the few types it passes (dim3, handles as pointers), and
//     device attributes come from cudaDeviceGetAttribute, never cudaDeviceProp,
//     whose layout changes between releases.
//
// The NVIDIA libraries are looked for, in order: already loaded in the
// process; each directory of $PPLAUNCH_CUDA_LIBS; nvidia/cu13/lib (NCCL:
// nvidia/nccl/lib) under every Python site-packages found; the loader path;
// $CUDA_PATH/lib64, $CUDA_HOME/lib64, /usr/local/cuda/lib64. NVRTC's builtins
// library is preloaded by absolute path from NVRTC's directory. Every symbol
// the binding calls is resolved when a library loads: a missing library is one
// error naming every library and every place looked at, a library missing a
// symbol is refused naming the symbol, never a crash at first use. Failed
// calls are *CUDAError values naming the call and the library's name, number
// and text for the status.
//
// All calls for one device must come from the one OS thread that owns it
// (runtime.LockOSThread); the binding does not lock. Thread (thread.go) is
// that OS thread, for the CUDA backend and NCCL alike. Subpackage cudaemu builds
// a CPU emulator of the same libraries for tests.
//
// Without cgo, every load fails with an error that says so.
//
// cbits is the bottom of the package graph: it must never import another
// package of this module (cudaemu imports nothing of it either; only
// cudaemu's tests do).
package cbits
