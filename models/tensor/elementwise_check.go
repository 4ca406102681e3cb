package tensor

// addDims checks that a and b are as long as y and returns that length.
func addDims(y, a, b *Tensor) int {
	mustLens("add", y.Len(), operand{"a", a}, operand{"b", b})
	return y.Len()
}
