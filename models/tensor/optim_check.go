package tensor

// adamwDims checks that AdamW's gradient and moments are as long as w and
// returns that length.
func adamwDims(w, g, m, v *Tensor) int {
	mustLens("adamw", w.Len(), operand{"grad", g}, operand{"m", m}, operand{"v", v})
	return w.Len()
}

// sgdDims checks that SGD's gradient and momentum are as long as w and
// returns that length.
func sgdDims(w, g, buf *Tensor) int {
	mustLens("sgd", w.Len(), operand{"grad", g}, operand{"momentum", buf})
	return w.Len()
}
