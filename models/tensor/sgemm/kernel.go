package sgemm

import "unsafe"

// A Kernel updates one mr×nr tile of C (row stride ldc, in floats) from k
// columns of A, element (i, p) at a[i·rs + p·cs] (in place, or packed), and
// k rows of packed B (nr floats per row): c[i][j] ← fma(a[i][p], b[p][j],
// c[i][j]) for p = 0..k-1, in order, starting from C when load is set and
// from 0 otherwise.
type Kernel struct {
	Name   string
	MR, NR int
	fn     func(k int, a *float32, rs, cs int, b, c *float32, ldc int, load int)
	// packed, where set, is fn for packed A (rs 1, cs MR), unrolled: the
	// last sliver of a block, of fewer than MR rows, is packed.
	packed func(k int, a *float32, rs, cs int, b, c *float32, ldc int, load int)
	// rows, where set, is fn for A row-major in place (cs 1), unrolled.
	rows func(k int, a *float32, rs, cs int, b, c *float32, ldc int, load int)
	// cols, where set, is fn for A column-major in place (rs 1), unrolled.
	cols func(k int, a *float32, rs, cs int, b, c *float32, ldc int, load int)
	// copyRows, where set, does packSliver's contiguous case (lane 1) with
	// vector loads, and reports false where it cannot.
	copyRows func(dst, src []float32, pstride, k, width, valid int, alpha float32) bool
}

// kernelGo is the portable micro-kernel. Where the compiler fuses a*b+c into
// one instruction (arm64, ppc64, s390x, riscv64), its bits are the assembly
// kernels'; on amd64 without FMA it rounds the product first.
func kernelGo(k int, a *float32, rs, cs int, b, c *float32, ldc int, load int) {
	const mr, nr = 4, 4
	if k == 0 {
		if load == 0 {
			cc := unsafe.Slice(c, (mr-1)*ldc+nr)
			for i := range mr {
				clear(cc[i*ldc : i*ldc+nr])
			}
		}
		return
	}
	pa := unsafe.Slice(a, (mr-1)*rs+(k-1)*cs+1)
	pb := unsafe.Slice(b, k*nr)
	cc := unsafe.Slice(c, (mr-1)*ldc+nr)
	var acc [mr][nr]float32
	if load != 0 {
		for i := range mr {
			copy(acc[i][:], cc[i*ldc:i*ldc+nr])
		}
	}
	for s := range k {
		bv := pb[s*nr : s*nr+nr : s*nr+nr]
		for i := range mr {
			ai := pa[i*rs+s*cs]
			acc[i][0] += ai * bv[0]
			acc[i][1] += ai * bv[1]
			acc[i][2] += ai * bv[2]
			acc[i][3] += ai * bv[3]
		}
	}
	for i := range mr {
		copy(cc[i*ldc:i*ldc+nr], acc[i][:])
	}
}

// goKernel is the portable kernel, available everywhere.
var goKernel = Kernel{Name: "go", MR: 4, NR: 4, fn: kernelGo}

// Kernels lists the kernels this CPU can run, fastest first; the last is the
// portable one.
func Kernels() []Kernel { return append(simdKernels(), goKernel) }
