package tensor

import (
	"math"
	"math/rand/v2"
	"testing"
)

func TestLayerNormAgainstReference(t *testing.T) {
	r := rand.New(rand.NewPCG(15, 16))
	n, d := 7, 37
	x, g, b := randTensor(r, n, d), randTensor(r, d), randTensor(r, d)
	for i := range x.Data {
		x.Data[i] = x.Data[i]*3 + 5 // an offset mean, as activations have
	}
	for _, be := range backends(t) {
		y, mean, rstd := New(n, d), New(n), New(n)
		be.LayerNorm(y, mean, rstd, x, g, b, 1e-5)
		want := make([]float32, n*d)
		for i := range n {
			row := x.Data[i*d : (i+1)*d]
			var mu, v float64
			for _, xv := range row {
				mu += float64(xv)
			}
			mu /= float64(d)
			for _, xv := range row {
				v += (float64(xv) - mu) * (float64(xv) - mu)
			}
			rs := 1 / math.Sqrt(v/float64(d)+1e-5)
			for j, xv := range row {
				want[i*d+j] = float32((float64(xv)-mu)*rs*float64(g.Data[j]) + float64(b.Data[j]))
			}
		}
		// Mean and variance of 37 values near 5 in float32 lose about
		// 37·2⁻²⁴·5 ≈ 1e-5 of the variance; 2e-5 relative covers it.
		closeTo(t, be.Name()+" layernorm", y.Data, want, 2e-5)
	}
}
