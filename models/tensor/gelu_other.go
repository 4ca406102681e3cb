//go:build !amd64

package tensor

// geluVector has no vector kernel on this architecture.
func geluVector(xs, ts, ys []float32) int { return 0 }

// geluBackVector has no vector kernel on this architecture.
func geluBackVector(xs, ts, dys, dxs []float32) int { return 0 }

// expVector has no vector kernel on this architecture.
func expVector(dst, src []float32, shift float32) int { return 0 }
