package sgemm

import (
	"fmt"
	"sync"
)

// Engine computes products with one kernel and one set of blocks.
type Engine struct {
	kern   Kernel
	blocks Blocks
	pool   sync.Pool // *workspace
}

// workspace holds one product's packed panels and an edge tile.
type workspace struct{ a, b, pa, tile []float32 }

// New returns an engine running kernel k with blocks b (rounded to its tile).
func New(k Kernel, b Blocks) *Engine {
	b.MC = max(k.MR, b.MC/k.MR*k.MR)
	b.NC = max(k.NR, b.NC/k.NR*k.NR)
	b.KC = max(1, b.KC)
	return &Engine{kern: k, blocks: b}
}

var (
	defaultOnce sync.Once
	defaultEng  *Engine
)

// Default is the engine of the fastest kernel this CPU runs, with blocks
// sized from its caches.
func Default() *Engine {
	defaultOnce.Do(func() {
		k := Kernels()[0]
		defaultEng = New(k, ChooseBlocks(readCaches(), k.MR, k.NR))
	})
	return defaultEng
}

// Kernel is the micro-kernel the engine runs.
func (e *Engine) Kernel() Kernel { return e.kern }

// Blocks are the engine's cache blocks.
func (e *Engine) Blocks() Blocks { return e.blocks }

// Name says which kernel runs, e.g. "avx512 12x32".
func (e *Engine) Name() string { return fmt.Sprintf("%s %dx%d", e.kern.Name, e.kern.MR, e.kern.NR) }

// workspace returns packing buffers for an m×n×k product, reused from the
// pool: sized to the product, so a small one does not clear megabytes.
func (e *Engine) workspace(m, n, k int) *workspace {
	mr, nr, bl := e.kern.MR, e.kern.NR, e.blocks
	kc := min(bl.KC, k)
	na, nb := mr*kc, roundUp(min(bl.NC, n), nr)*kc
	w, _ := e.pool.Get().(*workspace)
	if w == nil {
		w = &workspace{tile: make([]float32, mr*nr)}
	}
	if cap(w.a) < na {
		w.a = make([]float32, na)
	}
	if cap(w.b) < nb {
		w.b = make([]float32, nb)
	}
	if npa := roundUp(min(bl.MC, m), mr) * kc; e.kern.packed != nil && n >= packMinCols && cap(w.pa) < npa {
		w.pa = make([]float32, npa)
	}
	w.a, w.b, w.pa = w.a[:cap(w.a)], w.b[:cap(w.b)], w.pa[:cap(w.pa)]
	return w
}

// Gemm computes C = alpha·op(A)·op(B) + beta·C on one goroutine, where op
// transposes when ta (tb) is set; C is m×n with row stride ldc, op(A) m×k and
// op(B) k×n. It panics, naming the operand, when a slice does not cover its
// strided extent. With beta 0, C is not read. Each element is formed as
// fma(a, alpha·b, c) along K in order (alpha scales packed B).
func (e *Engine) Gemm(ta, tb bool, m, n, k int, alpha float32, a []float32, lda int,
	b []float32, ldb int, beta float32, c []float32, ldc int) {
	checkArgs(ta, tb, m, n, k, len(a), lda, len(b), ldb, len(c), ldc)
	if m == 0 || n == 0 {
		return
	}
	if k == 0 || alpha == 0 || beta != 1 {
		scaleC(c, ldc, m, n, beta, k > 0 && alpha != 0)
		if k == 0 || alpha == 0 {
			return
		}
	}
	load0 := beta != 0
	w := e.workspace(m, n, k)
	defer e.pool.Put(w)
	bl := e.blocks
	rs, cs := strides(lda, ta)
	for jc := 0; jc < n; jc += bl.NC {
		nb := min(bl.NC, n-jc)
		for pc := 0; pc < k; pc += bl.KC {
			kb := min(bl.KC, k-pc)
			e.packB(w.b, b, ldb, tb, pc, jc, kb, nb, alpha)
			for ic := 0; ic < m; ic += bl.MC {
				mb := min(bl.MC, m-ic)
				blk := operand{a: a[ic*rs+pc*cs:], rs: rs, cs: cs}
				if e.kern.packed != nil && nb >= packMinCols && (cs != 1 || e.kern.rows == nil) {
					blk = e.packA(w.pa, blk, mb, kb)
				}
				e.macro(w, blk, c[ic*ldc+jc:], ldc, mb, nb, kb, load0 || pc > 0)
			}
		}
	}
}

// operand is a block of op(A): in place, element (i, p) at a[i·rs + p·cs],
// or packed (packA).
type operand struct {
	a      []float32
	rs, cs int
	packed bool
}

// packMinCols is the block width from which A is packed when its column step
// is not 1 (a transposed A): the copy then costs less than the unrolled
// packed kernel saves (A is read once per NR columns), and reading a tall
// transposed A in place strides over a page per step (0.5× OpenBLAS on
// GPT-2-small's weight gradient, against 0.9× packed). Narrower blocks read
// it in place with the column-major kernel. A row-major A is read
// in place by its own unrolled kernel: packing it, a transpose, cost 5-15% on
// GPT-2-small's products, measured in alternating rounds.
const packMinCols = 512

// packA copies an mb×kb block of A into dst as MR-tall slivers: sliver s
// holds, for each p in order, the mr values of rows s·mr.. (zero past mb).
func (e *Engine) packA(dst []float32, a operand, mb, kb int) operand {
	mr := e.kern.MR
	for s := 0; s*mr < mb; s++ {
		e.packSliver(dst[s*mr*kb:(s+1)*mr*kb], a.a[s*mr*a.rs:], a.rs, a.cs, kb, mr, min(mr, mb-s*mr), 1)
	}
	return operand{a: dst, rs: 1, cs: mr, packed: true}
}

// scaleC sets C = beta·C before the products add onto it. When the product
// will start from zero (beta 0 and something to add), C is left unread.
func scaleC(c []float32, ldc, m, n int, beta float32, adding bool) {
	if beta == 0 && adding {
		return
	}
	for i := range m {
		row := c[i*ldc : i*ldc+n]
		if beta == 0 {
			clear(row)
			continue
		}
		for j := range row {
			row[j] *= beta
		}
	}
}

// macro runs the micro-kernel over every tile of an mb×nb block of C from
// A (packed, or in place) and packed B of depth kb. In place, a sliver of
// fewer than MR rows is packed (zero rows below), and an edge tile of C goes through a buffer of
// MR×NR, so the kernel never reads or writes outside the operands.
func (e *Engine) macro(w *workspace, a operand, c []float32, ldc, mb, nb, kb int, load bool) {
	mr, nr := e.kern.MR, e.kern.NR
	ld := 0
	if load {
		ld = 1
	}
	full, fn, edge := mb/mr*mr, e.kern.fn, e.kern.fn
	if a.cs == 1 && e.kern.rows != nil {
		fn = e.kern.rows
	} else if a.rs == 1 && e.kern.cols != nil {
		fn = e.kern.cols
	}
	if e.kern.packed != nil {
		edge = e.kern.packed // the edge sliver is packed
	}
	if a.packed {
		fn = e.kern.packed
	} else if full < mb {
		e.packSliver(w.a, a.a[full*a.rs:], a.rs, a.cs, kb, mr, mb-full, 1)
	}
	for jr := 0; jr < nb; jr += nr {
		pb := &w.b[jr*kb]
		cols := min(nr, nb-jr)
		for ir := 0; ir < mb; ir += mr {
			pa, rs, cs := &w.a[0], 1, mr
			if a.packed {
				pa = &a.a[ir*kb]
			} else if ir < full {
				// The sliver's last element lies within A: checked by checkArgs.
				_ = a.a[(ir+mr-1)*a.rs+(kb-1)*a.cs]
				pa, rs, cs = &a.a[ir*a.rs], a.rs, a.cs
			}
			rows, f := min(mr, mb-ir), fn
			if !a.packed && ir >= full {
				f = edge
			}
			if rows == mr && cols == nr {
				_ = c[(ir+mr-1)*ldc+jr+nr-1]
				f(kb, pa, rs, cs, pb, &c[ir*ldc+jr], ldc, ld)
				continue
			}
			t := w.tile
			if load {
				for i := range rows {
					copy(t[i*nr:i*nr+cols], c[(ir+i)*ldc+jr:])
				}
			}
			f(kb, pa, rs, cs, pb, &t[0], nr, ld)
			for i := range rows {
				copy(c[(ir+i)*ldc+jr:(ir+i)*ldc+jr+cols], t[i*nr:])
			}
		}
	}
}

// checkArgs panics unless every operand covers its strided extent.
func checkArgs(ta, tb bool, m, n, k, la, lda, lb, ldb, lc, ldc int) {
	if m < 0 || n < 0 || k < 0 {
		panic(fmt.Sprintf("sgemm: negative dimension m=%d n=%d k=%d", m, n, k))
	}
	ar, ac := m, k
	if ta {
		ar, ac = k, m
	}
	br, bc := k, n
	if tb {
		br, bc = n, k
	}
	checkMatrix("A", ar, ac, la, lda)
	checkMatrix("B", br, bc, lb, ldb)
	checkMatrix("C", m, n, lc, ldc)
}

func checkMatrix(what string, rows, cols, length, ld int) {
	if ld < max(1, cols) {
		panic(fmt.Sprintf("sgemm: %s is %d×%d but its row stride is %d (want ≥ %d)", what, rows, cols, ld, max(1, cols)))
	}
	if rows > 0 && cols > 0 && length < (rows-1)*ld+cols {
		panic(fmt.Sprintf("sgemm: %s is %d×%d with row stride %d, which needs %d elements; the slice has %d",
			what, rows, cols, ld, (rows-1)*ld+cols, length))
	}
}
