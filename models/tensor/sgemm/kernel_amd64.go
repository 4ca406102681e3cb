package sgemm

import "golang.org/x/sys/cpu"

//go:noescape
func kernelAVX2(k int, a *float32, rs, cs int, b, c *float32, ldc int, load int)

// copyRows32 packs k contiguous rows of up to 32 floats (pack_amd64.s).
//
//go:noescape
func copyRows32(dst, src *float32, k, pstride int, mask uint64, alpha float32)

//go:noescape
func kernelAVX2Packed(k int, a *float32, rs, cs int, b, c *float32, ldc int, load int)

//go:noescape
func kernelAVX512Packed(k int, a *float32, rs, cs int, b, c *float32, ldc int, load int)

//go:noescape
func kernelAVX2Rows(k int, a *float32, rs, cs int, b, c *float32, ldc int, load int)

//go:noescape
func kernelAVX512Rows(k int, a *float32, rs, cs int, b, c *float32, ldc int, load int)

//go:noescape
func kernelAVX2Cols(k int, a *float32, rs, cs int, b, c *float32, ldc int, load int)

//go:noescape
func kernelAVX512Cols(k int, a *float32, rs, cs int, b, c *float32, ldc int, load int)

//go:noescape
func kernelAVX512(k int, a *float32, rs, cs int, b, c *float32, ldc int, load int)

// simdKernels are the assembly kernels the CPU supports, fastest first.
func simdKernels() []Kernel {
	var ks []Kernel
	if cpu.X86.HasAVX512F && cpu.X86.HasAVX512VL {
		ks = append(ks, Kernel{Name: "avx512", MR: 12, NR: 32, fn: kernelAVX512, packed: kernelAVX512Packed, rows: kernelAVX512Rows, cols: kernelAVX512Cols, copyRows: copyRows})
	}
	if cpu.X86.HasAVX2 && cpu.X86.HasFMA {
		ks = append(ks, Kernel{Name: "avx2", MR: 6, NR: 16, fn: kernelAVX2, packed: kernelAVX2Packed, rows: kernelAVX2Rows, cols: kernelAVX2Cols})
	}
	return ks
}

// copyRows is packSliver's contiguous case for slivers 32 wide.
func copyRows(dst, src []float32, pstride, k, width, valid int, alpha float32) bool {
	if width != 32 || k == 0 || valid < 1 {
		return false
	}
	_ = dst[k*width-1]
	_ = src[(k-1)*pstride+valid-1]
	copyRows32(&dst[0], &src[0], k, pstride, 1<<valid-1, alpha)
	return true
}
