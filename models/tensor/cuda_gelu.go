package tensor

// Gelu is GELU with the CPU backend's tanh approximation.
func (c *CUDA) Gelu(y, th, x *Tensor) {
	c.elementwise("gelu", "gelu_forward", geluDims("gelu", "th", y, th, x), y, th, x)
}

// GeluBackward computes dx = dy·gelu'(x) (dx may alias dy).
func (c *CUDA) GeluBackward(dx, dy, x, th *Tensor) {
	c.elementwise("gelu backward", "gelu_backward", geluBackwardDims("gelu backward", "th", dx, dy, x, th), dx, dy, x, th)
}

// GeluExact is the exact GELU x·Φ(x) (erff), keeping Φ(x) in cdf.
func (c *CUDA) GeluExact(y, cdf, x *Tensor) {
	c.elementwise("gelu exact", "gelu_exact_forward", geluDims("gelu exact", "cdf", y, cdf, x), y, cdf, x)
}

// GeluExactBackward computes dx = dy·(Φ(x) + x·φ(x)) (dx may alias dy).
func (c *CUDA) GeluExactBackward(dx, dy, x, cdf *Tensor) {
	c.elementwise("gelu exact backward", "gelu_exact_backward", geluBackwardDims("gelu exact backward", "cdf", dx, dy, x, cdf), dx, dy, x, cdf)
}
