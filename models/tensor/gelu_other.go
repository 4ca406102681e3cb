//go:build !amd64

package tensor

// geluVector has no vector kernel on this architecture.
func geluVector(xs, ts, ys []float32) int { return 0 }

// geluBackVector has no vector kernel on this architecture.
func geluBackVector(xs, ts, dys, dxs []float32) int { return 0 }

// expVector has no vector kernel on this architecture.
func expVector(dst, src []float32, shift float32) int { return 0 }

// packVector has no vector kernel on this architecture.
func packVector(dst []uint16, src []float32) int { return 0 }

// unpackVector has no vector kernel on this architecture.
func unpackVector(dst []float32, src []uint16) int { return 0 }

// roundVector has no vector kernel on this architecture.
func roundVector(dst, src []float32) int { return 0 }
