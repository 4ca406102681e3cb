// Package cbits is a small cgo shim that dlopens native libraries at run time,
// so one binary builds with only cgo and -ldl and runs on machines with or
// without them. Today it loads OpenBLAS (checked to be OpenBLAS, held
// single-threaded, with its kernels chosen from the CPU's features unless the
// user set OPENBLAS_CORETYPE); a missing or foreign library is an error naming
// the library and symbol, never a crash. The NVIDIA
// libraries (CUDA, cuBLAS, NVRTC, NCCL) are to be loaded the same way: open the
// library, resolve every symbol up front, report the first one missing by name.
// Without cgo, loading fails with an error that says so.
//
// It imports no other package of pplaunch and must never import one: every
// package that needs native code (models/tensor) builds on it.
package cbits
