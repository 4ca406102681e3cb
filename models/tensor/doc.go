// Package tensor holds the float32 tensor type and the compute Backend: the
// operations a GPT needs, fused where that saves a pass over memory, and the
// Memory that owns tensor storage (allocation, explicit host copies, optimizer
// updates, Σx²), so that code above a backend never touches values directly.
//
// The CPU backend is the reference; its tensors are host memory (Data). Matrix
// products go to OpenBLAS when libopenblas.so.0 can be loaded at run time
// (through cbits), else to the project's own SIMD kernels (package sgemm,
// whose sums along K have one order whatever the blocking and threads);
// gonum's pure-Go BLAS on request; PPLAUNCH_BLAS chooses. Work is cut into
// blocks that depend on the shapes alone and run on up to GOMAXPROCS
// goroutines, and no sum is split by thread count, so results are the same
// bits at any GOMAXPROCS. GELU and the softmaxes' exp have AVX2 kernels that
// perform the scalar loop's operations in the same order; they are chosen at
// run time from the CPU's features (golang.org/x/sys/cpu), and
// GODEBUG=cpu.avx2=off forces the scalar loops. Operands of the wrong size panic with a message naming the operation
// and the operand.
//
// The CUDA backend (NewCUDA) keeps tensors in device memory from a caching
// allocator, runs matrix products on cuBLAS (row-major through the operand
// swap; TF32 only when asked) and everything else in the kernels of
// kernels/*.cu, which NVRTC compiles at first use for the device's own
// architecture and which are cached on disk. All CUDA calls of a device come
// from one locked OS thread, compute on one stream, and every reduction has a
// fixed order without atomics, so results do not depend on the run. For host
// transports the backend is a PinnedStaging: copies between tensors and pinned host
// buffers run on a second stream, ordered against the compute by events.
//
// Both backends are cut by op family (matmul, layernorm, gelu, attention,
// embed, crossentropy, elementwise, reduce, optim, mem): cpu_<family>.go,
// cuda_<family>.go and kernels/<family>.cu, with the argument checks both
// make written once in <family>_check.go (the table is in docs/models.md).
//
// This package imports only cbits (the NVIDIA and BLAS libraries loaded at run
// time) and its own sgemm, and never anything of the models or ranks above it.
package tensor
