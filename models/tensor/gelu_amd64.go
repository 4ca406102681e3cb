package tensor

import "golang.org/x/sys/cpu"

// geluAVX2 computes GELU on the first len(x)&^7 elements, eight at a time, with
// the operations of geluScalar in the same order (no fused multiply-add), so
// its bits equal the scalar loop's. k holds the constants, each broadcast to 8.
//
//go:noescape
func geluAVX2(x, th, y []float32, k *[17][8]float32)

// geluBackAVX2 is geluBackScalar on the first len(x)&^7 elements, in the same
// order. k holds 0.5, 1, geluC and 3·geluA, each broadcast to 8.
//
//go:noescape
func geluBackAVX2(x, th, dy, dx []float32, k *[4][8]float32)

var (
	geluBackK = func() (k [4][8]float32) {
		for i, c := range []float32{0.5, 1, geluC, 3 * geluA} {
			for j := range k[i] {
				k[i][j] = c
			}
		}
		return k
	}()
	hasAVX2 = cpu.X86.HasAVX2 && cpu.X86.HasAVX
	geluK   = func() (k [17][8]float32) {
		for i, c := range []float32{geluA, geluC, tanhClamp, -tanhClamp, 0.5, 1,
			tanhA13, tanhA11, tanhA9, tanhA7, tanhA5, tanhA3, tanhA1, tanhB6, tanhB4, tanhB2, tanhB0} {
			for j := range k[i] {
				k[i][j] = c
			}
		}
		return k
	}()
)

// geluVector runs the AVX2 kernel where the CPU has it and returns how many
// leading elements it did.
func geluVector(xs, ts, ys []float32) int {
	n := len(xs) &^ 7
	if !hasAVX2 || n == 0 {
		return 0
	}
	geluAVX2(xs[:n], ts[:n], ys[:n], &geluK)
	return n
}

// geluBackVector runs the AVX2 derivative kernel where the CPU has it and
// returns how many leading elements it did.
func geluBackVector(xs, ts, dys, dxs []float32) int {
	n := len(xs) &^ 7
	if !hasAVX2 || n == 0 {
		return 0
	}
	geluBackAVX2(xs[:n], ts[:n], dys[:n], dxs[:n], &geluBackK)
	return n
}
