package cbits

import (
	"strings"
	"testing"
)

func TestOpenBLASSgemm(t *testing.T) {
	o, err := LoadOpenBLAS()
	if err != nil {
		t.Skipf("OpenBLAS not loadable (install libopenblas0-pthread): %v", err)
	}
	if !strings.Contains(strings.ToLower(o.Config()), "openblas") {
		t.Fatalf("config %q does not name OpenBLAS", o.Config())
	}
	// A is 2×3, B is 3×2 stored transposed (2×3), C = A·Bᵀ plus beta·C.
	a := []float32{1, 2, 3, 4, 5, 6}
	b := []float32{1, 0, 1, 0, 1, 0}
	c := []float32{1, 1, 1, 1}
	o.Sgemm(false, true, 2, 2, 3, 1, a, 3, b, 3, 2, c, 2)
	want := []float32{1 + 3 + 2, 2 + 2, 4 + 6 + 2, 5 + 2}
	for i := range want {
		if c[i] != want[i] {
			t.Fatalf("c = %v, want %v", c, want)
		}
	}
}
