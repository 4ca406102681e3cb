package tensor

import (
	"math"
	"math/rand/v2"
	"testing"
)

// The vector exp gives exp32's bits on every input, the clamps' edges, zero,
// infinities and NaN included.
func TestExpVectorMatchesScalar(t *testing.T) {
	if !hasAVX2 {
		t.Skip("no AVX2: the scalar exp32 runs alone")
	}
	r := rand.New(rand.NewPCG(88, 37))
	var xs []float32
	for _, v := range []float32{0, -0.0, 1, -1, 88.37, -87.3, 88.3, -87.2, 100, -100, 0.3465736, -0.3465736} {
		xs = append(xs, v, math.Nextafter32(v, 200), math.Nextafter32(v, -200))
	}
	xs = append(xs, float32(math.Inf(1)), float32(math.Inf(-1)))
	for range 100000 {
		xs = append(xs, float32(r.Float64()*200-100))
	}
	for len(xs)%8 != 3 {
		xs = append(xs, float32(r.NormFloat64()))
	}
	for _, shift := range []float32{0, 1.5, -3} {
		got := make([]float32, len(xs))
		expShifted(got, xs, shift)
		for i, x := range xs {
			if want := exp32(x - shift); math.Float32bits(got[i]) != math.Float32bits(want) {
				t.Fatalf("exp(%v - %v) = %v (%#x), scalar %v (%#x)", x, shift, got[i], math.Float32bits(got[i]), want, math.Float32bits(want))
			}
		}
	}
	nan := []float32{float32(math.NaN()), 1, 2, 3, 4, 5, 6, 7}
	out := make([]float32, 8)
	expShifted(out, nan, 0)
	if out[0] == out[0] {
		t.Fatalf("exp(NaN) = %v", out[0])
	}
}
