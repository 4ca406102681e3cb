// Package cudaemu builds, for tests, an emulator of the NVIDIA libraries the
// cbits CUDA binding loads: shared objects with the real sonames
// (libcudart.so.13, libcublas.so.13, libcublasLt.so.13, libnvrtc.so.13,
// libnvrtc-builtins.so.13.0) and the same C symbols, on the CPU. Device
// memory is host memory between guard pages; each stream's work (copies,
// memsets, kernels, GEMMs) runs in order but only when something waits for
// it (a synchronisation, an event another stream waits for, a copy into
// pageable memory, a free; each cudaEventQuery that finds its event pending
// runs one operation and says cudaErrorNotReady), so a missing
// synchronisation shows as it would on a GPU: streams, including the default
// stream, do not wait for each other except through events, and copies from
// and into cudaMallocHost memory happen when their stream gets there
// (CUDAEMU_SYNC=1 runs work as it is queued instead); cuBLAS SGEMM is the
// column-major reference definition; NVRTC
// compiles the kernel source with the host C++ compiler behind an emulation
// header (src/cudaemu_kernel.h), and a launch runs each block's threads as
// cooperative fibers, so __syncthreads, warp shuffles and shared memory
// behave as on a GPU. It reports one device of compute capability 9.0.
//
// Where a GPU would fail later or silently, the emulator fails at once:
// device allocations lie between guard pages (a kernel running past a buffer
// faults); copies, memsets and cuBLAS operands are checked against the
// allocations; a launch checks its configuration as a GPU does (at most 1024
// threads a block, 48 KiB of dynamic shared memory) and that it passes as many
// arguments as the kernel has parameters; a block whose threads cannot all
// reach a barrier is a deadlock error (sticky, as a GPU's launch failure is).
//
// Environment: CUDAEMU_NO_DRIVER=1 and CUDAEMU_DEVICE_COUNT=0 make it behave as
// a machine without a driver (35) or without a GPU (100); CUDAEMU_MEMORY_BYTES
// sets the device memory (default 8 GiB); CUDAEMU_STACK_KB each thread's stack
// (default 256); CUDAEMU_CXX the compiler (default g++).
//
// A test sets PPLAUNCH_CUDA_LIBS=Dir(t) before the process's first
// cbits.LoadCUDA, or calls cbits.LoadCUDAFrom(Dir(t)). The emulator and the
// real libraries share sonames, so they must not be loaded in one process.
//
// Only tests import this package. It must never import anything of the
// project but cbits (and only its tests do that).
package cudaemu
