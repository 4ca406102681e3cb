package tensor

import (
	"math"
	"testing"
)

func TestExp32Accuracy(t *testing.T) {
	worst := 0.0
	for x := float32(-87); x < 88; x += 0.00731 {
		got := float64(exp32(x))
		want := math.Exp(float64(x))
		if rel := math.Abs(got-want) / want; rel > worst {
			worst = rel
		}
	}
	if worst > 4e-7 {
		t.Fatalf("exp32 worst relative error %.3g, want ≤ 4e-7", worst)
	}
	if exp32(-100) != 0 || !math.IsInf(float64(exp32(100)), 1) {
		t.Fatalf("exp32 range ends: %v %v", exp32(-100), exp32(100))
	}
}

// TestGeluAccuracy checks GELU (and the tanh it keeps) against float64 over
// the whole useful range, including where tanh saturates.
func TestGeluAccuracy(t *testing.T) {
	var xs []float32
	for x := float32(-12); x < 12; x += 0.000913 {
		xs = append(xs, x)
	}
	x, _ := From(xs, len(xs))
	y, th := New(len(xs)), New(len(xs))
	gonumCPU().Gelu(y, th, x)
	worstT, worstY := 0.0, 0.0
	for i, v := range xs {
		u := 0.7978845608028654 * (float64(v) + 0.044715*float64(v)*float64(v)*float64(v))
		wantT := math.Tanh(u)
		wantY := 0.5 * float64(v) * (1 + wantT)
		worstT = math.Max(worstT, math.Abs(float64(th.Data[i])-wantT))
		worstY = math.Max(worstY, math.Abs(float64(y.Data[i])-wantY)/math.Max(1, math.Abs(wantY)))
		if wantT != 0 && math.Abs(u) < 0.5 && math.Abs(float64(th.Data[i])-wantT)/math.Abs(wantT) > 1e-6 {
			t.Fatalf("tanh(%v) = %v, want %v (relative error above 1e-6)", u, th.Data[i], wantT)
		}
	}
	if worstT > 5e-7 || worstY > 1e-6 {
		t.Fatalf("worst errors: tanh %.3g (want ≤ 5e-7), gelu %.3g (want ≤ 1e-6 relative)", worstT, worstY)
	}
}
