package tensor

// LayerNorm normalises each row of x, a warp per row.
func (c *CUDA) LayerNorm(y, mean, rstd, x, gamma, beta *Tensor, eps float32) {
	const op = "layernorm"
	n, d := layerNormDims(y, mean, rstd, x, gamma, beta)
	if n == 0 {
		return
	}
	c.launch("layernorm_forward", rowGrid(n), blk(rowBlock), 0, c.ptrAny(op, y), c.ptr(op, mean), c.ptr(op, rstd),
		c.ptrAny(op, x), c.ptrAny(op, gamma), c.ptrAny(op, beta), int32(n), int32(d), eps, dtBits(y, x, gamma, beta))
}

// LayerNormBackwardInput computes dx from dy and the saved statistics.
func (c *CUDA) LayerNormBackwardInput(dx, dy, x, mean, rstd, gamma *Tensor) {
	const op = "layernorm backward"
	n, d := layerNormBackwardInputDims(dx, dy, x, mean, rstd, gamma)
	if n == 0 {
		return
	}
	c.launch("layernorm_backward_input", rowGrid(n), blk(rowBlock), 0, c.ptrAny(op, dx), c.ptrAny(op, dy), c.ptrAny(op, x),
		c.ptr(op, mean), c.ptr(op, rstd), c.ptrAny(op, gamma), int32(n), int32(d), dtBits(dx, dy, x, gamma))
}

// LayerNormBackwardWeight computes dgamma = Σ_rows dy·x̂ and dbeta = Σ_rows dy
// in two fixed passes over chunks of rows.
func (c *CUDA) LayerNormBackwardWeight(dgamma, dbeta, dy, x, mean, rstd *Tensor) {
	const op = "layernorm backward weight"
	n, d := layerNormBackwardWeightDims(dgamma, dbeta, dy, x, mean, rstd)
	if d == 0 {
		return
	}
	gp, bp := c.ptrAny(op, dgamma), c.ptrAny(op, dbeta)
	chunks := (n + colChunk - 1) / colChunk
	if chunks == 0 {
		c.memset(gp, int(dgamma.Bytes()))
		c.memset(bp, int(dbeta.Bytes()))
		return
	}
	part := c.tmp(2 * chunks * d)
	pb := part.ptr + devPtr(chunks*d)*4
	c.launch("layernorm_weight_partial", colGrid(chunks, d), blk(colBlock), 0, part.ptr, pb,
		c.ptrAny(op, dy), c.ptrAny(op, x), c.ptr(op, mean), c.ptr(op, rstd), int32(n), int32(d), int32(colChunk), dtBits(dy, x))
	cols := blk((d + colBlock - 1) / colBlock)
	c.launch("colsum_final", cols, blk(colBlock), 0, gp, part.ptr, int32(chunks), int32(d), dtBits(dgamma))
	c.launch("colsum_final", cols, blk(colBlock), 0, bp, pb, int32(chunks), int32(d), dtBits(dbeta))
	c.alloc.put(part)
}
