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

func TestTanh32Accuracy(t *testing.T) {
	worst := 0.0
	for x := float32(-12); x < 12; x += 0.000913 {
		got := float64(tanh32(x))
		want := math.Tanh(float64(x))
		if d := math.Abs(got - want); d > worst {
			worst = d
		}
		if want != 0 && math.Abs(float64(x)) < 0.5 && math.Abs(got-want)/math.Abs(want) > 1e-6 {
			t.Fatalf("tanh32(%v) = %v, want %v (relative error above 1e-6)", x, got, want)
		}
		if tanh32(-x) != -tanh32(x) {
			t.Fatalf("tanh32 not odd at %v", x)
		}
	}
	if worst > 5e-7 {
		t.Fatalf("tanh32 worst absolute error %.3g, want ≤ 5e-7", worst)
	}
}
