package sgemm

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// operands returns random A, B and C for an m×n×k product with the given
// transposes and padded row strides.
type operands struct {
	ta, tb        bool
	m, n, k       int
	lda, ldb, ldc int
	a, b, c       []float32
}

func newOperands(seed uint64, ta, tb bool, m, n, k, pad int) operands {
	r := rand.New(rand.NewPCG(seed, 7))
	o := operands{ta: ta, tb: tb, m: m, n: n, k: k}
	ar, ac := m, k
	if ta {
		ar, ac = k, m
	}
	br, bc := k, n
	if tb {
		br, bc = n, k
	}
	o.lda, o.ldb, o.ldc = ac+pad, bc+pad, n+pad
	fill := func(rows, ld int) []float32 {
		s := make([]float32, rows*ld)
		for i := range s {
			s[i] = float32(r.NormFloat64())
		}
		return s
	}
	o.a, o.b, o.c = fill(ar, o.lda), fill(br, o.ldb), fill(m, o.ldc)
	return o
}

func (o operands) at(a []float32, ld int, t bool, i, j int) float64 {
	if t {
		return float64(a[j*ld+i])
	}
	return float64(a[i*ld+j])
}

// reference is alpha·op(A)·op(B) + beta·C in float64.
func (o operands) reference(alpha, beta float32) []float64 {
	out := make([]float64, o.m*o.n)
	for i := range o.m {
		for j := range o.n {
			var s float64
			for p := range o.k {
				s += o.at(o.a, o.lda, o.ta, i, p) * o.at(o.b, o.ldb, o.tb, p, j)
			}
			out[i*o.n+j] = float64(alpha)*s + float64(beta)*float64(o.c[i*o.ldc+j])
		}
	}
	return out
}

func (o operands) run(e *Engine, alpha, beta float32) []float32 {
	c := slices.Clone(o.c)
	e.Gemm(o.ta, o.tb, o.m, o.n, o.k, alpha, o.a, o.lda, o.b, o.ldb, beta, c, o.ldc)
	return c
}

// engines are every kernel this CPU runs, each with its own blocks and with
// tiny blocks that cut every dimension many times.
func engines() []*Engine {
	var es []*Engine
	for _, k := range Kernels() {
		es = append(es, New(k, ChooseBlocks(readCaches(), k.MR, k.NR)))
		es = append(es, New(k, Blocks{MC: k.MR, KC: 5, NC: k.NR}))
	}
	return es
}

func TestGemmMatchesFloat64(t *testing.T) {
	shapes := [][3]int{{1, 1, 1}, {7, 5, 3}, {13, 33, 17}, {64, 64, 64}, {37, 70, 129}, {3, 100, 9}, {29, 530, 41}}
	for _, e := range engines() {
		for _, s := range shapes {
			for _, tr := range [][2]bool{{false, false}, {false, true}, {true, false}, {true, true}} {
				for _, ab := range [][2]float32{{1, 0}, {1, 1}, {0.5, -2}} {
					name := fmt.Sprintf("%s/%v/%v/%v", e.Name(), s, tr, ab)
					o := newOperands(uint64(s[0]*1000+s[1]), tr[0], tr[1], s[0], s[1], s[2], 3)
					got := o.run(e, ab[0], ab[1])
					want := o.reference(ab[0], ab[1])
					for i := range o.m {
						for j := range o.n {
							g, w := float64(got[i*o.ldc+j]), want[i*o.n+j]
							if math.Abs(g-w) > 1e-5*float64(o.k+2)*(1+math.Abs(w)) {
								t.Fatalf("%s: c[%d,%d] = %g, want %g", name, i, j, g, w)
							}
						}
						// Padding past n is never written.
						for j := o.n; j < o.ldc && i < o.m-1; j++ {
							if got[i*o.ldc+j] != o.c[i*o.ldc+j] {
								t.Fatalf("%s: wrote padding c[%d,%d]", name, i, j)
							}
						}
					}
				}
			}
		}
	}
}

// The bits of a product do not depend on the blocks, the thread count, or on
// computing it whole or by row slices (as a pipeline cuts a batch).
func TestGemmBitsIndependentOfBlockingThreadsAndSlices(t *testing.T) {
	for _, k := range Kernels() {
		base := New(k, ChooseBlocks(readCaches(), k.MR, k.NR))
		variants := []*Engine{
			New(k, Blocks{MC: k.MR, KC: 1, NC: k.NR}),
			New(k, Blocks{MC: 3 * k.MR, KC: 7, NC: 2 * k.NR}),
			New(k, Blocks{MC: 4096, KC: 4096, NC: 8192}),
		}
		for _, tr := range [][2]bool{{false, false}, {false, true}, {true, false}, {true, true}} {
			for _, beta := range []float32{0, 1} {
				// 600 columns: A is packed in blocks that wide, read in place in narrower ones.
				o := newOperands(11, tr[0], tr[1], 90, 600, 70, 1)
				want := o.run(base, 1, beta)
				for _, v := range variants {
					if got := o.run(v, 1, beta); !slices.Equal(got, want) {
						t.Fatalf("%s %v beta %v: blocks %+v change the bits", k.Name, tr, beta, v.Blocks())
					}
				}
				for _, workers := range []int{2, 3, 8} {
					c := slices.Clone(o.c)
					base.GemmParallel(workers, o.ta, o.tb, o.m, o.n, o.k, 1, o.a, o.lda, o.b, o.ldb, beta, c, o.ldc)
					if !slices.Equal(c, want) {
						t.Fatalf("%s %v: %d workers change the bits", k.Name, tr, workers)
					}
				}
				// Row slices of C (a pipeline's micro-batches) give the rows of the whole.
				c := slices.Clone(o.c)
				for r0 := 0; r0 < o.m; r0 += 29 {
					r1 := min(o.m, r0+29)
					ao := r0 * o.lda
					if o.ta {
						ao = r0
					}
					base.Gemm(o.ta, o.tb, r1-r0, o.n, o.k, 1, o.a[ao:], o.lda, o.b, o.ldb, beta, c[r0*o.ldc:], o.ldc)
				}
				if !slices.Equal(c, want) {
					t.Fatalf("%s %v: row slices differ from the whole product", k.Name, tr)
				}
			}
		}
	}
}

// The assembly kernels form each sum in the same order with the same fused
// operations, so they agree to the bit.
func TestSIMDKernelsAgreeBitForBit(t *testing.T) {
	ks := simdKernels()
	if len(ks) < 2 {
		t.Skipf("this CPU runs %d assembly kernels; need two to compare", len(ks))
	}
	o := newOperands(5, false, true, 97, 83, 211, 2)
	want := o.run(New(ks[0], ChooseBlocks(Caches{}, ks[0].MR, ks[0].NR)), 1, 1)
	for _, k := range ks[1:] {
		if got := o.run(New(k, ChooseBlocks(Caches{}, k.MR, k.NR)), 1, 1); !slices.Equal(got, want) {
			t.Fatalf("kernel %s differs from %s", k.Name, ks[0].Name)
		}
	}
}

func TestBetaZeroDoesNotReadC(t *testing.T) {
	for _, e := range engines() {
		o := newOperands(3, false, false, 20, 40, 10, 0)
		for i := range o.c {
			o.c[i] = float32(math.NaN())
		}
		for _, k := range []int{10, 0} {
			o.k = k
			c := o.run(e, 1, 0)
			if i := slices.IndexFunc(c, func(v float32) bool { return v != v }); i >= 0 {
				t.Fatalf("%s k=%d: NaN in C survived beta 0 at %d", e.Name(), k, i)
			}
		}
	}
}

func TestStridedBatchedEqualsLoop(t *testing.T) {
	e := Default()
	const batch, m, n, k = 5, 17, 19, 23
	o := newOperands(9, true, false, m*batch, n, k, 0) // big buffers to slice
	sa, sb, sc := k*m, 0, m*n
	a := o.a[:batch*sa]
	b := o.b[:k*n]
	c := make([]float32, batch*sc)
	e.GemmStridedBatched(3, true, false, m, n, k, 1, a, m, sa, b, n, sb, 0, c, n, sc, batch)
	for i := range batch {
		want := make([]float32, sc)
		e.Gemm(true, false, m, n, k, 1, a[i*sa:], m, b, n, 0, want, n)
		if !slices.Equal(c[i*sc:(i+1)*sc], want) {
			t.Fatalf("batch item %d differs from its own product", i)
		}
	}
}

func TestShortOperandPanicsNamingIt(t *testing.T) {
	cases := []struct {
		name       string
		la, lb, lc int
		lda        int
		want       string
	}{
		{"short A", 5, 12, 6, 4, "A is 2×4 with row stride 4, which needs 8 elements; the slice has 5"},
		{"short C", 8, 12, 5, 4, "C is 2×3"},
		{"stride", 8, 12, 6, 3, "A is 2×4 but its row stride is 3"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			defer func() {
				r := recover()
				if s, _ := r.(string); !strings.Contains(s, tc.want) {
					t.Fatalf("panic %v, want it to contain %q", r, tc.want)
				}
			}()
			Default().Gemm(false, false, 2, 3, 4, 1, make([]float32, tc.la), tc.lda, make([]float32, tc.lb), 3, 0, make([]float32, tc.lc), 3)
		})
	}
}

func TestChooseBlocks(t *testing.T) {
	cases := []struct {
		c      Caches
		mr, nr int
		want   Blocks
	}{
		{Caches{48 << 10, 2 << 20, 480 << 20}, 12, 32, Blocks{MC: 672, KC: 384, NC: 8192}},
		{Caches{32 << 10, 256 << 10, 8 << 20}, 6, 16, Blocks{MC: 60, KC: 512, NC: 1024}},
		{Caches{}, 4, 4, Blocks{MC: 256, KC: 512, NC: 2048}},
	}
	for _, tc := range cases {
		if got := ChooseBlocks(tc.c, tc.mr, tc.nr); got != tc.want {
			t.Errorf("ChooseBlocks(%+v, %d, %d) = %+v, want %+v", tc.c, tc.mr, tc.nr, got, tc.want)
		}
	}
}

func TestParseSize(t *testing.T) {
	for in, want := range map[string]int{"48K": 48 << 10, "2048K": 2 << 20, "32M": 32 << 20, "512": 512, "x": 0, "": 0} {
		if got := parseSize(in); got != want {
			t.Errorf("parseSize(%q) = %d, want %d", in, got, want)
		}
	}
}

func TestSplit(t *testing.T) {
	cases := []struct {
		m, n, k, workers int
		band             int
		rows             bool
	}{
		{1024, 384, 128, 2, 516, true}, // two bands of whole 12-row tiles
		{256, 384, 128, 2, 384, false}, // too narrow to cut: one band
		{4096, 768, 768, 8, 516, true}, // no band under 512 rows
		{64, 64, 64, 2, 64, true},      // too small to thread
		{1024, 4096, 256, 4, 1024, false},
		{1024, 1024, 1024, 1, 1024, true},
	}
	for _, tc := range cases {
		band, rows := Split(tc.m, tc.n, tc.k, tc.workers, 12, 32)
		if band != tc.band || rows != tc.rows {
			t.Errorf("Split(%d, %d, %d, %d) = %d, %v; want %d, %v", tc.m, tc.n, tc.k, tc.workers, band, rows, tc.band, tc.rows)
		}
	}
}
