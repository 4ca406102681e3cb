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
// Kernels are compiled with the compiler's thread-sanitizer instrumentation
// but not its run time: every load and store calls the emulator (src/check.cc),
// which fails the launch, as compute-sanitizer's racecheck and initcheck
// report, on two threads of a block touching a shared-memory byte between the
// same two barriers with one writing (a __syncwarp orders a warp's lanes), a
// read of shared memory the block never wrote or past the launch's dynamic
// shared memory, and device memory that one block of a launch writes and
// another reads or writes (blocks are not ordered). The report names the
// kernel, the address (a __shared__ variable by name) and the threads or
// blocks. Blocks run in a seeded random order, a block's warps in a random
// order, each warp's lanes up or down, reversed at every pass between
// barriers; fresh shared memory and new cudaMalloc buffers hold 0xff bytes
// (NaN), not zeros. (A __shared__ variable of a function template is not
// checked: GCC does not place a template's static variables in a named
// section. The project's kernels have none.)
//
// Environment: CUDAEMU_NO_DRIVER=1 and CUDAEMU_DEVICE_COUNT=0 make it behave as
// a machine without a driver (35) or without a GPU (100); CUDAEMU_MEMORY_BYTES
// sets the device memory (default 8 GiB); CUDAEMU_STACK_KB each thread's stack
// (default 256); CUDAEMU_CXX the compiler (default g++); CUDAEMU_SEED the block
// and thread orders (default 1; every failure names it); CUDAEMU_CHECK=0 turns
// the access checks off; CUDAEMU_CHECK_BLOCKS how many blocks of a launch are
// checked (default 256, the first to run: a random sample of a larger grid).
//
// A test sets PPLAUNCH_CUDA_LIBS=Dir(t) before the process's first
// cbits.LoadCUDA, or calls cbits.LoadCUDAFrom(Dir(t)). The emulator and the
// real libraries share sonames, so they must not be loaded in one process.
//
// Only tests import this package. It must never import anything of the
// project but cbits (and only its tests do that).
package cudaemu
