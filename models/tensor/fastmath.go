package tensor

import "math"

// exp32 is e^x in float32 to within a few ulp: x = n·ln2 + r with |r| ≤ ln2/2,
// e^r by a degree-6 polynomial, scaled by 2^n. math.Exp in float64 costs several
// times more and the softmax passes would show in a step's time.
func exp32(x float32) float32 {
	if x > 88.37 {
		return float32(math.Inf(1))
	}
	if x < -87.3 {
		return 0
	}
	const (
		log2e = 1.44269504088896341
		ln2hi = 0.693359375
		ln2lo = -2.12194440e-4
	)
	// x·log2e + 128.5 is positive here, so truncation rounds to nearest.
	n := float32(int32(x*log2e+128.5) - 128)
	r := x - n*ln2hi - n*ln2lo
	p := float32(1.0/720)*r + float32(1.0/120)
	p = p*r + float32(1.0/24)
	p = p*r + float32(1.0/6)
	p = p*r + 0.5
	p = p*r + 1
	p = p*r + 1
	return p * math.Float32frombits(uint32(int32(n)+127)<<23)
}

// Coefficients of the rational tanh that GELU uses (Eigen's float32 tanh).
const (
	tanhClamp = 7.90531110763549805
	tanhA1    = 4.89352455891786e-03
	tanhA3    = 6.37261928875436e-04
	tanhA5    = 1.48572235717979e-05
	tanhA7    = 5.12229709037114e-08
	tanhA9    = -8.60467152213735e-11
	tanhA11   = 2.00018790482477e-13
	tanhA13   = -2.76076847742355e-16
	tanhB0    = 4.89352518554385e-03
	tanhB2    = 2.26843463243900e-03
	tanhB4    = 1.18534705686654e-04
	tanhB6    = 1.19825839466702e-06
)

// expShifted sets dst[i] = exp32(src[i] - shift), eight at a time where the
// CPU has AVX2 (the same bits), then one at a time.
func expShifted(dst, src []float32, shift float32) {
	dst = dst[:len(src)]
	for i := expVector(dst, src, shift); i < len(src); i++ {
		dst[i] = exp32(src[i] - shift)
	}
}
