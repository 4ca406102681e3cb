package tensor

import "math"

// expAVX2 is exp32(src[i] - shift) into dst on the first len(src)&^7
// elements, eight at a time, with exp32's operations in the same order.
//
//go:noescape
func expAVX2(dst, src []float32, shift float32, k *[17][8]float32)

var expK = func() (k [17][8]float32) {
	const (
		log2e = 1.44269504088896341
		ln2hi = 0.693359375
		ln2lo = -2.12194440e-4
	)
	rows := []float32{log2e, 128.5, math.Float32frombits(128), ln2hi, ln2lo,
		1.0 / 720, 1.0 / 120, 1.0 / 24, 1.0 / 6, 0.5, 1, 1, math.Float32frombits(127),
		88.37, -87.3, float32(math.Inf(1)), 0}
	for i, c := range rows {
		for j := range k[i] {
			k[i][j] = c
		}
	}
	return k
}()

// expVector runs the AVX2 kernel where the CPU has it and returns how many
// leading elements it did.
func expVector(dst, src []float32, shift float32) int {
	n := len(src) &^ 7
	if !hasAVX2 || n == 0 {
		return 0
	}
	expAVX2(dst[:n], src[:n], shift, &expK)
	return n
}
