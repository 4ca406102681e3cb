package tensor

// lnDims returns x's rows N and width D, checking the per-row statistics
// mean and rstd [N], each of rows against N·D elements and each of cols
// against D, in order.
func lnDims(op string, x, mean, rstd *Tensor, rows, cols []operand) (n, d int) {
	n, d = x.Rows()
	mustLen(op, "mean", mean, n)
	mustLen(op, "rstd", rstd, n)
	mustLens(op, n*d, rows...)
	mustLens(op, d, cols...)
	return n, d
}

// layerNormDims checks LayerNorm's operands: y like x [N,D], mean and rstd
// [N], gamma and beta [D]. It returns N and D.
func layerNormDims(y, mean, rstd, x, gamma, beta *Tensor) (n, d int) {
	return lnDims("layernorm", x, mean, rstd, []operand{{"y", y}}, []operand{{"gamma", gamma}, {"beta", beta}})
}

// layerNormBackwardInputDims checks dy and dx like x [N,D], the statistics
// [N] and gamma [D], and returns N and D.
func layerNormBackwardInputDims(dx, dy, x, mean, rstd, gamma *Tensor) (n, d int) {
	return lnDims("layernorm backward", x, mean, rstd, []operand{{"dy", dy}, {"dx", dx}}, []operand{{"gamma", gamma}})
}

// layerNormBackwardWeightDims checks dy like x [N,D], the statistics [N],
// dgamma and dbeta [D], and returns N and D.
func layerNormBackwardWeightDims(dgamma, dbeta, dy, x, mean, rstd *Tensor) (n, d int) {
	return lnDims("layernorm backward weight", x, mean, rstd, []operand{{"dy", dy}}, []operand{{"dgamma", dgamma}, {"dbeta", dbeta}})
}
