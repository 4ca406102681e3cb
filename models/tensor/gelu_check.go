package tensor

// geluDims checks a GELU forward's operands, y and the saved tensor (named
// saved: th or cdf) each as long as x, and returns that length.
func geluDims(op, saved string, y, s, x *Tensor) int {
	mustLens(op, x.Len(), operand{"y", y}, operand{saved, s})
	return x.Len()
}

// geluBackwardDims checks a GELU backward's operands, dx, dy and the saved
// tensor (th or cdf) each as long as x, and returns that length.
func geluBackwardDims(op, saved string, dx, dy, x, s *Tensor) int {
	mustLens(op, x.Len(), operand{"dx", dx}, operand{"dy", dy}, operand{saved, s})
	return x.Len()
}
