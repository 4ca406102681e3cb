package cudaemu_test

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"unsafe"

	"github.com/pplaunch/pplaunch/cbits"
)

// refGemm is the column-major definition, in float64:
// C[i + j*ldc] = alpha * sum_l op(A)[i,l] * op(B)[l,j] + beta * C[i + j*ldc].
func refGemm(ta, tb bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int,
	beta float32, c []float32, ldc int) {
	for j := 0; j < n; j++ {
		for i := 0; i < m; i++ {
			var s float64
			for l := 0; l < k; l++ {
				var av, bv float32
				if ta {
					av = a[l+i*lda]
				} else {
					av = a[i+l*lda]
				}
				if tb {
					bv = b[j+l*ldb]
				} else {
					bv = b[l+j*ldb]
				}
				s += float64(av) * float64(bv)
			}
			v := float64(alpha) * s
			if beta != 0 {
				v += float64(beta) * float64(c[i+j*ldc])
			}
			c[i+j*ldc] = float32(v)
		}
	}
}

type gemmCase struct {
	ta, tb        bool
	m, n, k       int
	lda, ldb, ldc int
	alpha, beta   float32
	sa, sb, sc    int
	batch         int
}

// cases: every transpose pair on odd shapes with leading dimensions larger
// than the rows, beta 0 (C holds NaN, which must not be read) and not.
func gemmCases(batched bool) []gemmCase {
	var cs []gemmCase
	for _, ta := range []bool{false, true} {
		for _, tb := range []bool{false, true} {
			for _, sh := range [][3]int{{7, 5, 3}, {33, 17, 65}, {1, 9, 4}, {64, 1, 31}} {
				m, n, k := sh[0], sh[1], sh[2]
				ar, br := m, k
				if ta {
					ar = k
				}
				if tb {
					br = n
				}
				for _, beta := range []float32{0, 0.5} {
					g := gemmCase{ta: ta, tb: tb, m: m, n: n, k: k, lda: ar + 3, ldb: br + 1, ldc: m + 2,
						alpha: 1.25, beta: beta, batch: 1}
					if batched {
						acols, bcols := k, n
						if ta {
							acols = m
						}
						if tb {
							bcols = k
						}
						g.batch = 3
						g.sa, g.sb, g.sc = g.lda*acols+5, g.ldb*bcols+2, g.ldc*n+7
					}
					cs = append(cs, g)
				}
			}
		}
	}
	return cs
}

func TestSgemmAgainstReference(t *testing.T) {
	for _, batched := range []bool{false, true} {
		c := load(t)
		h, err := c.BlasCreate()
		must(t, err)
		s, err := c.StreamCreate()
		must(t, err)
		must(t, c.BlasSetStream(h, s))
		for i, g := range gemmCases(batched) {
			name := fmt.Sprintf("batched=%v %+v", batched, g)
			acols, bcols := g.k, g.n
			if g.ta {
				acols = g.m
			}
			if g.tb {
				bcols = g.k
			}
			na := g.sa*(g.batch-1) + g.lda*acols
			nb := g.sb*(g.batch-1) + g.ldb*bcols
			nc := g.sc*(g.batch-1) + g.ldc*g.n
			a, b, cc := seq(na, uint32(3*i+1)), seq(nb, uint32(3*i+2)), seq(nc, uint32(3*i+3))
			if g.beta == 0 {
				for j := range cc {
					cc[j] = float32(math.NaN())
				}
			}
			da, db, dc := upload(t, c, a), upload(t, c, b), upload(t, c, cc)
			if batched {
				err = c.SgemmStridedBatched(h, g.ta, g.tb, g.m, g.n, g.k, g.alpha, da, g.lda, int64(g.sa), db, g.ldb, int64(g.sb),
					g.beta, dc, g.ldc, int64(g.sc), g.batch)
			} else {
				err = c.Sgemm(h, g.ta, g.tb, g.m, g.n, g.k, g.alpha, da, g.lda, db, g.ldb, g.beta, dc, g.ldc)
			}
			must(t, err)
			must(t, c.StreamSynchronize(s))
			got := download(t, c, dc, nc)
			want := append([]float32(nil), cc...)
			for bi := 0; bi < g.batch; bi++ {
				refGemm(g.ta, g.tb, g.m, g.n, g.k, g.alpha, a[bi*g.sa:], g.lda, b[bi*g.sb:], g.ldb, g.beta, want[bi*g.sc:], g.ldc)
			}
			for j := range want {
				w, gv := want[j], got[j]
				if math.IsNaN(float64(w)) != math.IsNaN(float64(gv)) || (!math.IsNaN(float64(w)) && !near(gv, w, 1e-5)) {
					t.Fatalf("%s: C[%d] = %v, want %v", name, j, gv, w)
				}
			}
		}
		must(t, c.BlasDestroy(h))
		must(t, c.StreamDestroy(s))
	}
}

// TestSgemmChecks: cuBLAS's argument errors, and operands that run past
// their allocation, are errors naming the call.
func TestSgemmChecks(t *testing.T) {
	c := load(t)
	h, err := c.BlasCreate()
	must(t, err)
	defer c.BlasDestroy(h)
	a := upload(t, c, make([]float32, 12))
	for _, tc := range []struct {
		name         string
		m, n, k, lda int
		want         string
	}{
		{"lda < m", 4, 3, 3, 3, "CUBLAS_STATUS_INVALID_VALUE (7)"},
		{"negative n", 4, -1, 3, 4, "CUBLAS_STATUS_INVALID_VALUE (7)"},
		{"past the end", 4, 4, 4, 4, "CUBLAS_STATUS_EXECUTION_FAILED (13)"},
	} {
		err := c.Sgemm(h, false, false, tc.m, tc.n, tc.k, 1, a, tc.lda, a, 4, 0, a, 4)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "cublasSgemm_v2(NN") {
			t.Errorf("%s: %v, want %s", tc.name, err, tc.want)
		}
	}
	must(t, c.Sgemm(h, false, false, 4, 3, 3, 1, a, 4, a, 4, 0, a, 4))
}

// TestTF32 rounds inputs to 10 mantissa bits when TF32 is on: 1+2^-12 times 1
// is exactly 1+2^-12 in fp32 and 1 in TF32.
func TestTF32(t *testing.T) {
	c := load(t)
	h, err := c.BlasCreate()
	must(t, err)
	defer c.BlasDestroy(h)
	x := float32(1 + 1.0/4096)
	a, b := upload(t, c, []float32{x}), upload(t, c, []float32{1})
	out := upload(t, c, []float32{0})
	for _, tf := range []bool{false, true} {
		must(t, c.BlasSetTF32(h, tf))
		must(t, c.Sgemm(h, false, false, 1, 1, 1, 1, a, 1, b, 1, 0, out, 1))
		got := download(t, c, out, 1)[0]
		want := x
		if tf {
			want = 1
		}
		if got != want {
			t.Errorf("tf32=%v: %v, want %v", tf, got, want)
		}
	}
}

// toBF16 is float32 -> bfloat16 to nearest even (finite values).
func toBF16(x float32) uint16 {
	b := math.Float32bits(x)
	b += 0x7fff + (b>>16)&1
	return uint16(b >> 16)
}

func fromBF16(h uint16) float32 { return math.Float32frombits(uint32(h) << 16) }

// uploadHalf copies bfloat16 values to a new device buffer.
func uploadHalf(t *testing.T, c *cbits.CUDALibs, v []uint16) cbits.DevPtr {
	t.Helper()
	p, err := c.Malloc(2 * len(v))
	must(t, err)
	must(t, c.MemcpyHtoDAsync(p, unsafe.Pointer(&v[0]), 2*len(v), 0))
	must(t, c.StreamSynchronize(0))
	t.Cleanup(func() { c.Free(p) })
	return p
}

// TestGemmExBF16: bfloat16 A and B are read as the float32 values they are,
// each element sums over k in order in float32 (as SGEMM), and a bfloat16 C
// is the float32 result alpha·acc + beta·C rounded once to nearest even; a
// float32 C is that result unrounded. The reference does the same float32
// operations, so the bits must match.
func TestGemmExBF16(t *testing.T) {
	c := load(t)
	h, err := c.BlasCreate()
	must(t, err)
	defer c.BlasDestroy(h)
	must(t, c.BlasSetTF32(h, false)) // with float32 reductions
	half := func(v []float32) []uint16 {
		o := make([]uint16, len(v))
		for i, x := range v {
			o[i] = toBF16(x)
		}
		return o
	}
	for i, g := range gemmCases(true) {
		for _, ct := range []cbits.DataType{cbits.DataBFloat16, cbits.DataFloat32} {
			acols, bcols := g.k, g.n
			if g.ta {
				acols = g.m
			}
			if g.tb {
				bcols = g.k
			}
			na, nb, nc := g.sa*(g.batch-1)+g.lda*acols, g.sb*(g.batch-1)+g.ldb*bcols, g.sc*(g.batch-1)+g.ldc*g.n
			a, b, cc := half(seq(na, uint32(3*i+1))), half(seq(nb, uint32(3*i+2))), half(seq(nc, uint32(3*i+3)))
			var dc cbits.DevPtr
			cf := make([]float32, nc)
			for j := range cf {
				cf[j] = fromBF16(cc[j])
			}
			if ct == cbits.DataBFloat16 {
				dc = uploadHalf(t, c, cc)
			} else {
				dc = upload(t, c, cf)
			}
			op := func(p cbits.DevPtr, ty cbits.DataType, ld, s int) cbits.GemmOperand {
				return cbits.GemmOperand{Ptr: p, Type: ty, LD: ld, Stride: int64(s)}
			}
			must(t, c.GemmEx(h, cbits.Gemm{TransA: g.ta, TransB: g.tb, M: g.m, N: g.n, K: g.k, Alpha: g.alpha, Beta: g.beta,
				A: op(uploadHalf(t, c, a), cbits.DataBFloat16, g.lda, g.sa), B: op(uploadHalf(t, c, b), cbits.DataBFloat16, g.ldb, g.sb),
				C: op(dc, ct, g.ldc, g.sc), Batch: g.batch}))
			must(t, c.DeviceSynchronize())
			var got []float32
			if ct == cbits.DataBFloat16 {
				gh := make([]uint16, nc)
				must(t, c.MemcpyDtoHAsync(unsafe.Pointer(&gh[0]), dc, 2*nc, 0))
				must(t, c.DeviceSynchronize())
				got = make([]float32, nc)
				for j, x := range gh {
					got[j] = fromBF16(x)
				}
			} else {
				got = download(t, c, dc, nc)
			}
			for bi := 0; bi < g.batch; bi++ {
				for j := 0; j < g.n; j++ {
					for r := 0; r < g.m; r++ {
						var s float32
						for l := 0; l < g.k; l++ {
							ai, bi2 := bi*g.sa+r+l*g.lda, bi*g.sb+l+j*g.ldb
							if g.ta {
								ai = bi*g.sa + l + r*g.lda
							}
							if g.tb {
								bi2 = bi*g.sb + j + l*g.ldb
							}
							s += float32(fromBF16(a[ai]) * fromBF16(b[bi2]))
						}
						ci := bi*g.sc + r + j*g.ldc
						w := float32(g.alpha * s)
						if g.beta != 0 {
							w = float32(w + float32(g.beta*cf[ci]))
						}
						if ct == cbits.DataBFloat16 {
							w = fromBF16(toBF16(w))
						}
						if math.Float32bits(got[ci]) != math.Float32bits(w) {
							t.Fatalf("%+v C %v: C[%d] = %v, want %v", g, ct, ci, got[ci], w)
						}
					}
				}
			}
		}
	}
}

// TestGemmExRefusesMixedTypes: a float32 A with a bfloat16 B, or a bfloat16
// C on a handle that allows reductions in bfloat16, is
// CUBLAS_STATUS_NOT_SUPPORTED naming the call.
func TestGemmExRefusesMixedTypes(t *testing.T) {
	c := load(t)
	h, err := c.BlasCreate()
	must(t, err)
	defer c.BlasDestroy(h)
	p := upload(t, c, make([]float32, 16))
	g := cbits.Gemm{M: 2, N: 2, K: 2, Alpha: 1,
		A: cbits.GemmOperand{Ptr: p, Type: cbits.DataFloat32, LD: 2}, B: cbits.GemmOperand{Ptr: p, Type: cbits.DataBFloat16, LD: 2},
		C: cbits.GemmOperand{Ptr: p, Type: cbits.DataFloat32, LD: 2}}
	err = c.GemmEx(h, g)
	if err == nil || !strings.Contains(err.Error(), "CUBLAS_STATUS_NOT_SUPPORTED (15)") || !strings.Contains(err.Error(), "cublasGemmEx(NN") {
		t.Fatalf("mixed types: %v, want CUBLAS_STATUS_NOT_SUPPORTED from cublasGemmEx", err)
	}
	g.B.Type = cbits.DataFloat32
	must(t, c.GemmEx(h, g))
	// A bfloat16 C needs float32 reductions in the math mode.
	g.A.Type, g.B.Type, g.C.Type = cbits.DataBFloat16, cbits.DataBFloat16, cbits.DataBFloat16
	if err := c.GemmEx(h, g); err == nil || !strings.Contains(err.Error(), "CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION") {
		t.Fatalf("bfloat16 C on the default math mode: %v, want a refusal naming the mode", err)
	}
	must(t, c.BlasSetTF32(h, false))
	must(t, c.GemmEx(h, g))
}
