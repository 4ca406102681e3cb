package tensor

// packBF16AVX2 is PackBF16 on the first len(src)&^15 values, with ToBF16's
// bits (integer operations only: the same rounding, NaNs and subnormals).
//
//go:noescape
func packBF16AVX2(dst []uint16, src []float32)

// unpackBF16AVX2 is UnpackBF16 on the first len(src)&^7 values.
//
//go:noescape
func unpackBF16AVX2(dst []float32, src []uint16)

// packVector rounds the leading values it can with AVX2 and returns how many.
func packVector(dst []uint16, src []float32) int {
	if !hasAVX2 {
		return 0
	}
	n := len(src) &^ 15
	packBF16AVX2(dst[:n], src[:n])
	return n
}

// unpackVector widens the leading values it can with AVX2 and returns how many.
func unpackVector(dst []float32, src []uint16) int {
	if !hasAVX2 {
		return 0
	}
	n := len(src) &^ 7
	unpackBF16AVX2(dst[:n], src[:n])
	return n
}

// roundBF16AVX2 is RoundBF16 on the first len(src)&^7 values.
//
//go:noescape
func roundBF16AVX2(dst, src []float32)

// roundVector rounds the leading values it can with AVX2 and returns how many.
func roundVector(dst, src []float32) int {
	if !hasAVX2 {
		return 0
	}
	n := len(src) &^ 7
	roundBF16AVX2(dst[:n], src[:n])
	return n
}
