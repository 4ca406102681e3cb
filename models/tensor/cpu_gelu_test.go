package tensor

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestGeluVectorMatchesScalar: the vector kernel gives the scalar loop's bits,
// including for saturated, infinite and NaN inputs.
func TestGeluVectorMatchesScalar(t *testing.T) {
	r := rand.New(rand.NewPCG(17, 18))
	n := 1003
	xs := make([]float32, n)
	for i := range xs {
		xs[i] = float32(r.NormFloat64() * 4)
	}
	xs[0], xs[1], xs[2], xs[3] = float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()), 30
	t1, y1 := make([]float32, n), make([]float32, n)
	t2, y2 := make([]float32, n), make([]float32, n)
	done := geluVector(xs, t1, y1)
	if done == 0 {
		t.Skip("no vector GELU kernel on this CPU or architecture")
	}
	geluScalar(xs[done:], t1[done:], y1[done:])
	geluScalar(xs, t2, y2)
	dy := make([]float32, n)
	for i := range dy {
		dy[i] = float32(r.NormFloat64())
	}
	d1, d2 := make([]float32, n), make([]float32, n)
	done = geluBackVector(xs, t2, dy, d1)
	geluBackScalar(xs[done:], t2[done:], dy[done:], d1[done:])
	geluBackScalar(xs, t2, dy, d2)
	for i := range xs {
		if math.Float32bits(t1[i]) != math.Float32bits(t2[i]) || math.Float32bits(y1[i]) != math.Float32bits(y2[i]) {
			t.Fatalf("x=%v: vector (%v, %v), scalar (%v, %v)", xs[i], t1[i], y1[i], t2[i], y2[i])
		}
		if math.Float32bits(d1[i]) != math.Float32bits(d2[i]) {
			t.Fatalf("x=%v: derivative vector %v, scalar %v", xs[i], d1[i], d2[i])
		}
	}
}
