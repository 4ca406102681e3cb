package tensor

import (
	"math"
	"math/rand/v2"
	"testing"
)

func randTensor(r *rand.Rand, shape ...int) *Tensor {
	t := New(shape...)
	for i := range t.Data {
		t.Data[i] = float32(r.NormFloat64())
	}
	return t
}

// backends returns every CPU backend this machine can run: gonum and the Go
// kernels always, OpenBLAS where libopenblas.so.0 loads.
func backends(t *testing.T) []*CPU {
	t.Helper()
	goCPU, err := NewCPU("go")
	if err != nil {
		t.Fatal(err)
	}
	bs := []*CPU{gonumCPU(), goCPU}
	if o, err := NewCPU("openblas"); err == nil {
		bs = append(bs, o)
	} else {
		t.Logf("OpenBLAS path not tested: %v", err)
	}
	return bs
}

// naiveGemm is the float64 reference for C = alpha·op(A)·op(B) + beta·C.
func naiveGemm(ta, tb bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	for i := range m {
		for j := range n {
			var s float64
			for p := range k {
				ai, bi := i*lda+p, p*ldb+j
				if ta {
					ai = p*lda + i
				}
				if tb {
					bi = j*ldb + p
				}
				av, bv := a[ai], b[bi]
				s += float64(av) * float64(bv)
			}
			c[i*ldc+j] = float32(float64(alpha)*s + float64(beta)*float64(c[i*ldc+j]))
		}
	}
}

func closeTo(t *testing.T, what string, got, want []float32, tol float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	for i := range got {
		g, w := float64(got[i]), float64(want[i])
		if math.IsNaN(g) || math.Abs(g-w) > tol*(1+math.Abs(w)) {
			t.Fatalf("%s[%d] = %v, want %v (tol %g)", what, i, g, w, tol)
		}
	}
}
