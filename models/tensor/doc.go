// Package tensor holds the float32 tensor type and the compute Backend: the
// operations a GPT needs, fused where that saves a pass over memory.
//
// The CPU backend is the reference. Matrix products go to OpenBLAS when
// libopenblas.so.0 can be loaded at run time (through cbits), else to gonum's
// pure-Go BLAS; PPLAUNCH_BLAS chooses. Work is cut into blocks that depend on the
// shapes alone and run on up to GOMAXPROCS goroutines, and no sum is split by
// thread count, so results are the same bits at any GOMAXPROCS. GELU has an AVX2
// kernel that performs the scalar loop's operations in the same order; it is
// chosen at run time from the CPU's features (golang.org/x/sys/cpu), and
// GODEBUG=cpu.avx2=off forces the scalar loop. Operands of the wrong size panic
// with a message naming the operation and the operand.
//
// A CUDA backend (cuBLAS, NVRTC kernels) is to implement the same interface.
//
// It imports only cbits (native libraries); it must never import models or
// anything above it.
package tensor
