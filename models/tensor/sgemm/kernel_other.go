//go:build !amd64

package sgemm

// simdKernels: no assembly kernel off amd64 yet; the portable one runs.
func simdKernels() []Kernel { return nil }
