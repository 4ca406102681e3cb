package tensor

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

func TestMatMulAgainstReference(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, be := range backends(t) {
		// The larger shapes take the blocked parallel path (rows, then columns).
		for _, sh := range [][3]int{{3, 5, 7}, {1100, 40, 30}, {40, 1100, 30}} {
			for _, ta := range []bool{false, true} {
				for _, tb := range []bool{false, true} {
					m, n, k := sh[0], sh[1], sh[2]
					a := randTensor(r, m, k)
					if ta {
						a = randTensor(r, k, m)
					}
					b := randTensor(r, k, n)
					if tb {
						b = randTensor(r, n, k)
					}
					c := randTensor(r, m, n)
					want := c.Clone()
					naiveGemm(ta, tb, m, n, k, 0.5, a.Data, a.Shape[1], b.Data, b.Shape[1], 2, want.Data, n)
					be.MatMul(c, a, ta, b, tb, 0.5, 2)
					// float32 sums of k=30 products of unit normals, against
					// float64: rounding is ~k·2⁻²⁴·|terms| ≈ 1e-5 relative at worst.
					closeTo(t, fmt.Sprintf("%s %v ta=%v tb=%v", be.Name(), sh, ta, tb), c.Data, want.Data, 1e-4)
				}
			}
		}
	}
}

func TestLinearAndBackward(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, be := range backends(t) {
		n, in, out := 9, 6, 5
		x, w, bias, res := randTensor(r, n, in), randTensor(r, out, in), randTensor(r, out), randTensor(r, n, out)
		y := New(n, out)
		be.Linear(y, x, w, bias, res)
		want := res.Clone()
		for i := range n {
			for j := range out {
				want.Data[i*out+j] += bias.Data[j]
			}
		}
		naiveGemm(false, true, n, out, in, 1, x.Data, in, w.Data, in, 1, want.Data, out)
		// Sums of at most 9 float32 products: rounding stays below 1e-6 relative.
		closeTo(t, be.Name()+" linear", y.Data, want.Data, 1e-5)

		dy := randTensor(r, n, out)
		dx, dw, db := New(n, in), New(out, in), New(out)
		be.LinearBackwardInput(dx, dy, w)
		be.LinearBackwardWeight(dw, db, dy, x)
		wdx, wdw, wdb := New(n, in), New(out, in), New(out)
		naiveGemm(false, false, n, in, out, 1, dy.Data, out, w.Data, in, 0, wdx.Data, in)
		naiveGemm(true, false, out, in, n, 1, dy.Data, out, x.Data, in, 0, wdw.Data, in)
		for i := range n {
			for j := range out {
				wdb.Data[j] += dy.Data[i*out+j]
			}
		}
		closeTo(t, be.Name()+" dx", dx.Data, wdx.Data, 1e-5)
		closeTo(t, be.Name()+" dw", dw.Data, wdw.Data, 1e-5)
		closeTo(t, be.Name()+" db", db.Data, wdb.Data, 1e-5)
	}
}

// TestLinearBiasAndResidual covers each combination of the optional bias and
// residual against the float64 reference.
func TestLinearBiasAndResidual(t *testing.T) {
	r := rand.New(rand.NewPCG(19, 20))
	n, in, out := 7, 5, 4
	x, w, bias, res := randTensor(r, n, in), randTensor(r, out, in), randTensor(r, out), randTensor(r, n, out)
	for _, be := range backends(t) {
		for _, c := range []struct {
			name      string
			bias, res *Tensor
		}{{"neither", nil, nil}, {"bias", bias, nil}, {"residual", nil, res}, {"both", bias, res}} {
			want := New(n, out)
			for i := range n {
				for j := range out {
					if c.bias != nil {
						want.Data[i*out+j] += c.bias.Data[j]
					}
					if c.res != nil {
						want.Data[i*out+j] += c.res.Data[i*out+j]
					}
				}
			}
			naiveGemm(false, true, n, out, in, 1, x.Data, in, w.Data, in, 1, want.Data, out)
			y := randTensor(r, n, out) // overwritten whole
			be.Linear(y, x, w, c.bias, c.res)
			// Five products and two additions per value: float32 rounding is
			// well below 1e-5 relative.
			closeTo(t, be.Name()+" linear with "+c.name, y.Data, want.Data, 1e-5)
		}
	}
}

// BenchmarkMatMul times a GPT-sized product (2048×768 from 256, the qkv
// projection of gpt-small at batch 16) on each BLAS path, side by side.
func BenchmarkMatMul(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 1))
	x, w, y := randTensor(r, 2048, 256), randTensor(r, 768, 256), New(2048, 768)
	for _, name := range []string{"openblas", "go", "gonum"} {
		be, err := NewCPU(name)
		if err != nil {
			b.Logf("%s: %v", name, err)
			continue
		}
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				be.MatMul(y, x, false, w, true, 1, 0)
			}
			b.ReportMetric(2*2048*768*256*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
}
