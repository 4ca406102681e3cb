package tensor

import "math"

const (
	geluC = 0.7978845608028654 // √(2/π)
	geluA = 0.044715
)

// Gelu is GELU with the tanh approximation.
func (c *CPU) Gelu(y, th, x *Tensor) {
	if m := c.mix(y, th, x); m != nil {
		defer m.done()
		x = m.in(x)
		y, th = m.out(y), m.out(th)
	}
	parallelRange(geluDims("gelu", "th", y, th, x), rowGrain*256, func(lo, hi int) {
		xs, ts, ys := x.Data[lo:hi], th.Data[lo:hi], y.Data[lo:hi]
		n := geluVector(xs, ts, ys)
		geluScalar(xs[n:], ts[n:], ys[n:])
	})
}

// geluScalar is GELU on each element; geluVector (assembly where the CPU has
// it) computes the same operations in the same order, so the bits agree.
func geluScalar(xs, ts, ys []float32) {
	ts, ys = ts[:len(xs)], ys[:len(xs)]
	for i, v := range xs {
		// tanh(u) as a ratio of odd and even polynomials on [-7.9, 7.9] (the
		// approximation Eigen uses, within a few ulp); beyond, tanh is ±1 in
		// float32.
		u := geluC * (v + geluA*v*v*v)
		if u > tanhClamp {
			u = tanhClamp
		} else if u < -tanhClamp {
			u = -tanhClamp
		}
		u2 := u * u
		p := float32(tanhA13)
		p = p*u2 + tanhA11
		p = p*u2 + tanhA9
		p = p*u2 + tanhA7
		p = p*u2 + tanhA5
		p = p*u2 + tanhA3
		p = p*u2 + tanhA1
		q := float32(tanhB6)
		q = q*u2 + tanhB4
		q = q*u2 + tanhB2
		q = q*u2 + tanhB0
		t := u * p / q
		ts[i] = t
		ys[i] = 0.5 * v * (1 + t)
	}
}

// GeluBackward computes dx = dy·gelu'(x).
func (c *CPU) GeluBackward(dx, dy, x, th *Tensor) {
	if m := c.mix(dx, dy, x, th); m != nil {
		defer m.done()
		dy, x, th = m.in(dy), m.in(x), m.in(th)
		dx = m.out(dx)
	}
	parallelRange(geluBackwardDims("gelu backward", "th", dx, dy, x, th), rowGrain*256, func(lo, hi int) {
		xs, ts, dys, dxs := x.Data[lo:hi], th.Data[lo:hi], dy.Data[lo:hi], dx.Data[lo:hi]
		n := geluBackVector(xs, ts, dys, dxs)
		geluBackScalar(xs[n:], ts[n:], dys[n:], dxs[n:])
	})
}

// geluBackScalar is GELU's derivative times dy; geluBackVector does the same
// operations in the same order.
func geluBackScalar(xs, ts, dys, dxs []float32) {
	ts, dys, dxs = ts[:len(xs)], dys[:len(xs)], dxs[:len(xs)]
	for i, v := range xs {
		t := ts[i]
		g := 0.5*(1+t) + 0.5*v*(1-t*t)*geluC*(1+3*geluA*v*v)
		dxs[i] = dys[i] * g
	}
}

// geluInvSqrt2Pi is 1/√(2π), the standard normal density at 0.
const geluInvSqrt2Pi = 0.3989422804014327

// GeluExact is the exact GELU, y = x·Φ(x), with Φ from math.Erf in float64
// rounded once to float32 (nanoGPT's nn.GELU(); the CUDA kernel's erff agrees
// within a few float32 ulp).
func (c *CPU) GeluExact(y, cdf, x *Tensor) {
	if m := c.mix(y, cdf, x); m != nil {
		defer m.done()
		x = m.in(x)
		y, cdf = m.out(y), m.out(cdf)
	}
	parallelRange(geluDims("gelu exact", "cdf", y, cdf, x), rowGrain*256, func(lo, hi int) {
		xs, ps, ys := x.Data[lo:hi], cdf.Data[lo:hi], y.Data[lo:hi]
		for i, v := range xs {
			p := float32(0.5 * (1 + math.Erf(float64(v)*math.Sqrt2/2)))
			ps[i] = p
			ys[i] = v * p
		}
	})
}

// GeluExactBackward computes dx = dy·(Φ(x) + x·φ(x)), φ the standard normal
// density (dx may alias dy).
func (c *CPU) GeluExactBackward(dx, dy, x, cdf *Tensor) {
	if m := c.mix(dx, dy, x, cdf); m != nil {
		defer m.done()
		dy, x, cdf = m.in(dy), m.in(x), m.in(cdf)
		dx = m.out(dx)
	}
	parallelRange(geluBackwardDims("gelu exact backward", "cdf", dx, dy, x, cdf), rowGrain*256, func(lo, hi int) {
		xs, ps, dys, dxs := x.Data[lo:hi], cdf.Data[lo:hi], dy.Data[lo:hi], dx.Data[lo:hi]
		for i, v := range xs {
			pdf := float32(geluInvSqrt2Pi * math.Exp(-0.5*float64(v)*float64(v)))
			dxs[i] = dys[i] * (ps[i] + v*pdf)
		}
	})
}
