// Command gen writes kernel_amd64.s, the register micro-kernels of package
// sgemm: one MR×NR tile of C updated by a sequence of rank-1 products, A read
// in place through its row and column strides and B from a packed sliver,
// with the rows and vector columns unrolled (hand-unrolled assembly of that size
// is where typing mistakes hide). Run it through `make sgemm-asm`.
package main

import (
	"fmt"
	"os"
	"strings"
)

// kernel describes one micro-kernel: mr rows of C, vecs vector registers per
// row, each of width floats, with register prefix reg ("Y" or "Z").
type kernel struct {
	name       string
	mr, vecs   int
	width      int
	reg        string
	bcastFirst int // first broadcast register
	nbcast     int // broadcast registers used in rotation
}

func (k kernel) nr() int { return k.vecs * k.width }

func (k kernel) acc(i, v int) string { return fmt.Sprintf("%s%d", k.reg, i*k.vecs+v) }

func (k kernel) bvec(v int) string { return fmt.Sprintf("%s%d", k.reg, k.mr*k.vecs+v) }

func (k kernel) bcast(i int) string {
	return fmt.Sprintf("%s%d", k.reg, k.bcastFirst+i%k.nbcast)
}

// aBase are the registers holding the addresses of rows 0, 3, 6 and 9 of A.
var aBase = []string{"SI", "R10", "R11", "R12"}

// aRow addresses row i of A's current column: its group's base, plus 0, 1
// or 2 row strides (R8).
func aRow(i int) string {
	switch i % 3 {
	case 0:
		return fmt.Sprintf("(%s)", aBase[i/3])
	case 1:
		return fmt.Sprintf("(%s)(R8*1)", aBase[i/3])
	}
	return fmt.Sprintf("(%s)(R8*2)", aBase[i/3])
}

// printer writes one line of assembly.
type printer func(format string, args ...any)

// loadC starts the accumulators from the tile of C at DX (row stride BX)
// when AX is set, else from zero, and ends at the label name_check.
func (k kernel) loadC(p printer, name string) {
	vb := k.width * 4
	p("\tTESTQ AX, AX")
	p("\tJZ %s_zero", name)
	p("\tMOVQ DX, R9")
	for i := range k.mr {
		for v := range k.vecs {
			p("\tVMOVUPS %d(R9), %s", v*vb, k.acc(i, v))
		}
		if i < k.mr-1 {
			p("\tADDQ BX, R9")
		}
	}
	p("\tJMP %s_check", name)
	p("%s_zero:", name)
	for i := range k.mr {
		for v := range k.vecs {
			a := k.acc(i, v)
			if k.reg == "Z" {
				p("\tVPXORD %s, %s, %s", a, a, a)
			} else {
				p("\tVXORPS %s, %s, %s", a, a, a)
			}
		}
	}
	p("%s_check:", name)
}

// storeC writes the accumulators back to the tile of C and returns.
func (k kernel) storeC(p printer) {
	vb := k.width * 4
	p("\tMOVQ DX, R9")
	for i := range k.mr {
		for v := range k.vecs {
			p("\tVMOVUPS %s, %d(R9)", k.acc(i, v), v*vb)
		}
		if i < k.mr-1 {
			p("\tADDQ BX, R9")
		}
	}
	p("\tVZEROUPPER")
	p("\tRET")
	p("")
}

func (k kernel) write(b *strings.Builder) {
	vb := k.width * 4 // bytes per vector
	var p printer = func(format string, args ...any) { fmt.Fprintf(b, format+"\n", args...) }
	p("// func %s(k int, a *float32, rs, cs int, b, c *float32, ldc int, load int)", k.name)
	p("TEXT ·%s(SB), NOSPLIT, $0-64", k.name)
	p("\tMOVQ k+0(FP), CX")
	p("\tMOVQ a+8(FP), SI")
	p("\tMOVQ rs+16(FP), R8")
	p("\tSHLQ $2, R8")
	p("\tMOVQ cs+24(FP), R13")
	p("\tSHLQ $2, R13")
	p("\tMOVQ b+32(FP), DI")
	p("\tMOVQ c+40(FP), DX")
	p("\tMOVQ ldc+48(FP), BX")
	p("\tSHLQ $2, BX")
	// Rows of A come in threes from one base: base, base+rs, base+2rs.
	for g := 1; g < (k.mr+2)/3; g++ {
		p("\tLEAQ (%s)(R8*2), %s", aBase[g-1], aBase[g])
		p("\tADDQ R8, %s", aBase[g])
	}
	p("\tMOVQ load+56(FP), AX")
	k.loadC(p, k.name)
	p("\tTESTQ CX, CX")
	p("\tJZ %s_store", k.name)
	p("%s_loop:", k.name)
	for v := range k.vecs {
		p("\tVMOVUPS %d(DI), %s", v*vb, k.bvec(v))
	}
	for i := range k.mr {
		p("\tVBROADCASTSS %s, %s", aRow(i), k.bcast(i))
		for v := range k.vecs {
			p("\tVFMADD231PS %s, %s, %s", k.bvec(v), k.bcast(i), k.acc(i, v))
		}
	}
	for g := range (k.mr + 2) / 3 {
		p("\tADDQ R13, %s", aBase[g])
	}
	p("\tADDQ $%d, DI", 4*k.nr())
	p("\tDECQ CX")
	p("\tJNZ %s_loop", k.name)
	p("%s_store:", k.name)
	k.storeC(p)
}

// writeUnrolled writes a kernel whose A column step is a constant, so the
// steps unroll by unroll with constant displacements (then single steps for
// the rest of k): packed A (row i of step p at a[p·mr + i], one pointer), or
// A row-major in place (cs 1: row i at a[i·rs + p], the bases of write).
func (k kernel) writeUnrolled(b *strings.Builder, unroll int, rowMajor bool) {
	k.writeUnrolledMode(b, unroll, map[bool]string{false: "packed", true: "rows"}[rowMajor])
}

// writeUnrolledMode is writeUnrolled; mode "cols" is A column-major in place
// (rs 1: row i at a[i + p·cs]), two steps at a time from one base.
func (k kernel) writeUnrolledMode(b *strings.Builder, unroll int, mode string) {
	rowMajor := mode == "rows"
	var p printer = func(format string, args ...any) { fmt.Fprintf(b, format+"\n", args...) }
	name := k.name
	groups := (k.mr + 2) / 3
	addr := func(i, s int) string { return fmt.Sprintf("%d(SI)", s*4*k.mr+4*i) }
	advance := func(steps int) { p("\tADDQ $%d, SI", 4*k.mr*steps) }
	if rowMajor {
		addr = func(i, s int) string { return fmt.Sprintf("%d%s", 4*s, aRow(i)) }
		advance = func(steps int) {
			for g := range groups {
				p("\tADDQ $%d, %s", 4*steps, aBase[g])
			}
		}
	}
	if mode == "cols" {
		unroll = 2
		addr = func(i, s int) string {
			if s == 0 {
				return fmt.Sprintf("%d(SI)", 4*i)
			}
			return fmt.Sprintf("%d(SI)(R13*1)", 4*i)
		}
		advance = func(steps int) {
			if steps == 2 {
				p("\tLEAQ (SI)(R13*2), SI")
			} else {
				p("\tADDQ R13, SI")
			}
		}
	}
	p("// func %s(k int, a *float32, rs, cs int, b, c *float32, ldc int, load int)", name)
	p("TEXT ·%s(SB), NOSPLIT, $0-64", name)
	p("\tMOVQ k+0(FP), CX")
	p("\tMOVQ a+8(FP), SI")
	if mode == "cols" {
		p("\tMOVQ cs+24(FP), R13")
		p("\tSHLQ $2, R13")
	}
	if rowMajor {
		p("\tMOVQ rs+16(FP), R8")
		p("\tSHLQ $2, R8")
		for g := 1; g < groups; g++ {
			p("\tLEAQ (%s)(R8*2), %s", aBase[g-1], aBase[g])
			p("\tADDQ R8, %s", aBase[g])
		}
	}
	p("\tMOVQ b+32(FP), DI")
	p("\tMOVQ c+40(FP), DX")
	p("\tMOVQ ldc+48(FP), BX")
	p("\tSHLQ $2, BX")
	p("\tMOVQ load+56(FP), AX")
	k.loadC(p, name)
	p("\tMOVQ CX, R9")
	p("\tSHRQ $%d, R9", log2(unroll))
	p("\tANDQ $%d, CX", unroll-1)
	p("\tTESTQ R9, R9")
	p("\tJZ %s_tail", name)
	step := func(s int) {
		for v := range k.vecs {
			p("\tVMOVUPS %d(DI), %s", s*4*k.nr()+v*k.width*4, k.bvec(v))
		}
		for i := range k.mr {
			p("\tVBROADCASTSS %s, %s", addr(i, s), k.bcast(i))
			for v := range k.vecs {
				p("\tVFMADD231PS %s, %s, %s", k.bvec(v), k.bcast(i), k.acc(i, v))
			}
		}
	}
	p("%s_loop:", name)
	for s := range unroll {
		step(s)
	}
	advance(unroll)
	p("\tADDQ $%d, DI", 4*k.nr()*unroll)
	p("\tDECQ R9")
	p("\tJNZ %s_loop", name)
	p("%s_tail:", name)
	p("\tTESTQ CX, CX")
	p("\tJZ %s_store", name)
	p("%s_one:", name)
	step(0)
	advance(1)
	p("\tADDQ $%d, DI", 4*k.nr())
	p("\tDECQ CX")
	p("\tJNZ %s_one", name)
	p("%s_store:", name)
	k.storeC(p)
}

func log2(n int) int {
	l := 0
	for n > 1 {
		n >>= 1
		l++
	}
	return l
}

func main() {
	var b strings.Builder
	b.WriteString("// Code generated by internal/gen; DO NOT EDIT.\n\n")
	b.WriteString("#include \"textflag.h\"\n\n")
	// AVX2+FMA: 12 accumulators, 2 B vectors and 2 broadcasts fill the 16 YMM registers.
	kernel{name: "kernelAVX2", mr: 6, vecs: 2, width: 8, reg: "Y", bcastFirst: 14, nbcast: 2}.write(&b)
	// AVX-512: 24 accumulators, 2 B vectors and 6 broadcasts of the 32 ZMM registers.
	kernel{name: "kernelAVX512", mr: 12, vecs: 2, width: 16, reg: "Z", bcastFirst: 26, nbcast: 6}.write(&b)
	// The same tiles for packed A, unrolled by four.
	kernel{name: "kernelAVX2Packed", mr: 6, vecs: 2, width: 8, reg: "Y", bcastFirst: 14, nbcast: 2}.writeUnrolled(&b, 4, false)
	kernel{name: "kernelAVX512Packed", mr: 12, vecs: 2, width: 16, reg: "Z", bcastFirst: 26, nbcast: 6}.writeUnrolled(&b, 4, false)
	// And for A row-major in place (column step 1).
	kernel{name: "kernelAVX2Rows", mr: 6, vecs: 2, width: 8, reg: "Y", bcastFirst: 14, nbcast: 2}.writeUnrolled(&b, 4, true)
	kernel{name: "kernelAVX512Rows", mr: 12, vecs: 2, width: 16, reg: "Z", bcastFirst: 26, nbcast: 6}.writeUnrolled(&b, 4, true)
	// And for A column-major in place (row step 1: a transposed A).
	kernel{name: "kernelAVX2Cols", mr: 6, vecs: 2, width: 8, reg: "Y", bcastFirst: 14, nbcast: 2}.writeUnrolledMode(&b, 2, "cols")
	kernel{name: "kernelAVX512Cols", mr: 12, vecs: 2, width: 16, reg: "Z", bcastFirst: 26, nbcast: 6}.writeUnrolledMode(&b, 2, "cols")
	out := "kernel_amd64.s"
	if len(os.Args) > 1 {
		out = os.Args[1]
	}
	if err := os.WriteFile(out, []byte(b.String()), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}
