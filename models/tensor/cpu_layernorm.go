package tensor

import "math"

// LayerNorm normalises each row of x.
func (c *CPU) LayerNorm(y, mean, rstd, x, gamma, beta *Tensor, eps float32) {
	mustF32("layernorm", []string{"mean", "rstd"}, mean, rstd)
	if m := c.mix(y, x, gamma, beta); m != nil {
		defer m.done()
		y, x, gamma, beta = m.out(y), m.in(x), m.in(gamma), m.in(beta)
	}
	n, d := layerNormDims(y, mean, rstd, x, gamma, beta)
	parallelRange(n, rowGrain, func(lo, hi int) {
		for r := lo; r < hi; r++ {
			xr := x.Data[r*d : (r+1)*d]
			m := sum4(xr, 0) / float32(d)
			v := sumSq4(xr, m) / float32(d)
			rs := float32(1 / math.Sqrt(float64(v+eps)))
			mean.Data[r], rstd.Data[r] = m, rs
			yr := y.Data[r*d : (r+1)*d]
			g, b := gamma.Data[:len(xr)], beta.Data[:len(xr)]
			for j, xv := range xr {
				yr[j] = (xv-m)*rs*g[j] + b[j]
			}
		}
	})
}

// sum4 is Σ x - shift with four running sums (a fixed order, and four times the
// throughput of one dependent chain).
func sum4(x []float32, shift float32) float32 {
	var s0, s1, s2, s3 float32
	j := 0
	for ; j+4 <= len(x); j += 4 {
		s0 += x[j] - shift
		s1 += x[j+1] - shift
		s2 += x[j+2] - shift
		s3 += x[j+3] - shift
	}
	for ; j < len(x); j++ {
		s0 += x[j] - shift
	}
	return (s0 + s1) + (s2 + s3)
}

// sumSq4 is Σ (x - m)² with four running sums.
func sumSq4(x []float32, m float32) float32 {
	var s0, s1, s2, s3 float32
	j := 0
	for ; j+4 <= len(x); j += 4 {
		a, b, c, d := x[j]-m, x[j+1]-m, x[j+2]-m, x[j+3]-m
		s0 += a * a
		s1 += b * b
		s2 += c * c
		s3 += d * d
	}
	for ; j < len(x); j++ {
		a := x[j] - m
		s0 += a * a
	}
	return (s0 + s1) + (s2 + s3)
}

// LayerNormBackwardInput computes dx = rstd·(g·dy - mean(g·dy) - x̂·mean(g·dy·x̂)).
func (c *CPU) LayerNormBackwardInput(dx, dy, x, mean, rstd, gamma *Tensor) {
	mustF32("layernorm backward", []string{"mean", "rstd"}, mean, rstd)
	if m := c.mix(dx, dy, x, gamma); m != nil {
		defer m.done()
		dx, dy, x, gamma = m.out(dx), m.in(dy), m.in(x), m.in(gamma)
	}
	n, d := layerNormBackwardInputDims(dx, dy, x, mean, rstd, gamma)
	parallelRange(n, rowGrain, func(lo, hi int) {
		for r := lo; r < hi; r++ {
			xr, dyr := x.Data[r*d:(r+1)*d], dy.Data[r*d:(r+1)*d]
			m, rs := mean.Data[r], rstd.Data[r]
			g := gamma.Data[:len(dyr)]
			var a0, a1, b0, b1 float32
			j := 0
			for ; j+2 <= len(dyr); j += 2 {
				g0, g1 := dyr[j]*g[j], dyr[j+1]*g[j+1]
				a0 += g0
				a1 += g1
				b0 += g0 * (xr[j] - m)
				b1 += g1 * (xr[j+1] - m)
			}
			for ; j < len(dyr); j++ {
				g0 := dyr[j] * g[j]
				a0 += g0
				b0 += g0 * (xr[j] - m)
			}
			a, b := (a0+a1)/float32(d), (b0+b1)*rs/float32(d)
			dxr := dx.Data[r*d : (r+1)*d]
			for j, v := range dyr {
				xh := (xr[j] - m) * rs
				dxr[j] = rs * (v*g[j] - a - xh*b)
			}
		}
	})
}

// LayerNormBackwardWeight computes dgamma = Σ_rows dy·x̂ and dbeta = Σ_rows dy.
func (c *CPU) LayerNormBackwardWeight(dgamma, dbeta, dy, x, mean, rstd *Tensor) {
	mustF32("layernorm backward weight", []string{"dgamma", "dbeta", "mean", "rstd"}, dgamma, dbeta, mean, rstd)
	if m := c.mix(dy, x); m != nil {
		defer m.done()
		dy, x = m.in(dy), m.in(x)
	}
	n, d := layerNormBackwardWeightDims(dgamma, dbeta, dy, x, mean, rstd)
	// dgamma = Σ_rows dy·x̂: form dy·x̂ row by row, then sum columns like dbeta.
	prod := c.scratch(n * d)
	parallelRange(n, rowGrain, func(lo, hi int) {
		for r := lo; r < hi; r++ {
			m, rs := mean.Data[r], rstd.Data[r]
			xr, dyr, pr := x.Data[r*d:(r+1)*d], dy.Data[r*d:(r+1)*d], prod[r*d:(r+1)*d]
			for j, v := range dyr {
				pr[j] = v * ((xr[j] - m) * rs)
			}
		}
	})
	c.colSums(dgamma.Data, prod, n, d)
	c.colSums(dbeta.Data, dy.Data, n, d)
	c.release(prod)
}
