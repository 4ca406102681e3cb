// Package tensor holds the float32 tensor type and the compute Backend: the CPU
// reference backend (OpenBLAS when it can be loaded, else pure Go) and, where the
// NVIDIA libraries are present, CUDA.
package tensor
