package tensor

import "math"

// exp32 is e^x in float32 to within a few ulp: x = n·ln2 + r with |r| ≤ ln2/2,
// e^r by a degree-6 polynomial, scaled by 2^n. math.Exp in float64 costs several
// times more and the softmax and GELU passes would dominate a step.
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
	n := float32(math.Floor(float64(x*log2e + 0.5)))
	r := x - n*ln2hi - n*ln2lo
	p := float32(1.0/720)*r + float32(1.0/120)
	p = p*r + float32(1.0/24)
	p = p*r + float32(1.0/6)
	p = p*r + 0.5
	p = p*r + 1
	p = p*r + 1
	return p * math.Float32frombits(uint32(int32(n)+127)<<23)
}

// tanh32 is tanh(x) through exp32, odd by construction.
func tanh32(x float32) float32 {
	a := x
	if a < 0 {
		a = -a
	}
	if a > 9 {
		a = 1
	} else if a < 0.0004 {
		// tanh a = a - a³/3 + ...; below this the cubic term is under one ulp.
	} else {
		e := exp32(-2 * a)
		a = (1 - e) / (1 + e)
	}
	if x < 0 {
		return -a
	}
	return a
}
