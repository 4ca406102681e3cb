package collective

import (
	"math"
	"math/rand/v2"
	"testing"
)

// The ring's add (vector kernels where there are any, then the scalar tail)
// gives the same bits as the plain loop, for every length around the kernels'
// blocks and for special values.
func TestReduceFromSameBitsAsScalar(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	special := []float64{0, math.Copysign(0, -1), 1e-40, -1e-310, math.MaxFloat32, math.Inf(1), math.Inf(-1), 1}
	for n := 0; n <= 200; n++ {
		own32, part32 := make([]float32, n), make([]float32, n)
		own64, part64 := make([]float64, n), make([]float64, n)
		for i := range n {
			a, b := rng.NormFloat64()*1e3, rng.NormFloat64()
			if rng.IntN(8) == 0 {
				a = special[rng.IntN(len(special))]
			}
			own32[i], part32[i], own64[i], part64[i] = float32(a), float32(b), a, b
		}
		want32, want64 := make([]float32, n), make([]float64, n)
		for i := range n {
			want32[i] = part32[i] + own32[i]
			want64[i] = part64[i] + own64[i]
		}
		reduceFrom(own32, part32, Sum)
		reduceFrom(own64, part64, Sum)
		for i := range n {
			if math.Float32bits(own32[i]) != math.Float32bits(want32[i]) {
				t.Fatalf("float32 n=%d [%d]: %v, want %v", n, i, own32[i], want32[i])
			}
			if math.Float64bits(own64[i]) != math.Float64bits(want64[i]) {
				t.Fatalf("float64 n=%d [%d]: %v, want %v", n, i, own64[i], want64[i])
			}
		}
	}
}
