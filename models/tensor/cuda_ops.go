package tensor

import (
	"fmt"
	"sort"
	"unsafe"
)

// LayerNorm normalises each row of x, a warp per row.
func (c *CUDA) LayerNorm(y, mean, rstd, x, gamma, beta *Tensor, eps float32) {
	const op = "layernorm"
	n, d := lnDims(op, x, mean, rstd)
	mustLen(op, "y", y, n*d)
	mustLen(op, "gamma", gamma, d)
	mustLen(op, "beta", beta, d)
	if n == 0 {
		return
	}
	c.launch("layernorm_forward", rowGrid(n), blk(rowBlock), 0, c.ptrAny(op, y), c.ptr(op, mean), c.ptr(op, rstd),
		c.ptrAny(op, x), c.ptrAny(op, gamma), c.ptrAny(op, beta), int32(n), int32(d), eps, dtBits(y, x, gamma, beta))
}

// LayerNormBackwardInput computes dx from dy and the saved statistics.
func (c *CUDA) LayerNormBackwardInput(dx, dy, x, mean, rstd, gamma *Tensor) {
	const op = "layernorm backward"
	n, d := lnDims(op, x, mean, rstd)
	mustLen(op, "dy", dy, n*d)
	mustLen(op, "dx", dx, n*d)
	mustLen(op, "gamma", gamma, d)
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
	n, d := lnDims(op, x, mean, rstd)
	mustLen(op, "dy", dy, n*d)
	mustLen(op, "dgamma", dgamma, d)
	mustLen(op, "dbeta", dbeta, d)
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

// Gelu is GELU with the CPU backend's tanh approximation.
func (c *CUDA) Gelu(y, th, x *Tensor) {
	c.elementwise("gelu", "gelu_forward", x.Len(), operand{"y", y}, operand{"th", th}, operand{"x", x})
}

// GeluBackward computes dx = dy·gelu'(x) (dx may alias dy).
func (c *CUDA) GeluBackward(dx, dy, x, th *Tensor) {
	c.elementwise("gelu backward", "gelu_backward", x.Len(), operand{"dx", dx}, operand{"dy", dy}, operand{"x", x}, operand{"th", th})
}

// GeluExact is the exact GELU x·Φ(x) (erff), keeping Φ(x) in cdf.
func (c *CUDA) GeluExact(y, cdf, x *Tensor) {
	c.elementwise("gelu exact", "gelu_exact_forward", x.Len(), operand{"y", y}, operand{"cdf", cdf}, operand{"x", x})
}

// GeluExactBackward computes dx = dy·(Φ(x) + x·φ(x)) (dx may alias dy).
func (c *CUDA) GeluExactBackward(dx, dy, x, cdf *Tensor) {
	c.elementwise("gelu exact backward", "gelu_exact_backward", x.Len(), operand{"dx", dx}, operand{"dy", dy}, operand{"x", x}, operand{"cdf", cdf})
}

// Add computes y = a + b.
func (c *CUDA) Add(y, a, b *Tensor) {
	c.elementwise("add", "add", y.Len(), operand{"y", y}, operand{"a", a}, operand{"b", b})
}

// Embed computes y[b,t] = wte[token] + wpe[t]; the token ids are copied to the device.
func (c *CUDA) Embed(y, wte, wpe *Tensor, tokens []int32) {
	D, T := embedDims("embed", wte, wpe, y, tokens)
	if len(tokens) == 0 || D == 0 {
		return
	}
	ids := c.uploadInts("embed", tokens)
	grid := [3]uint32{uint32(len(tokens)), uint32((D + colBlock - 1) / colBlock), 1}
	c.launch("embed_forward", grid, blk(colBlock), 0, c.ptrAny("embed", y), c.ptrAny("embed", wte), c.ptrAny("embed", wpe), ids.ptr,
		int32(T), int32(D), dtBits(y, wte, wpe))
	c.alloc.put(ids)
}

// tokenRows lists, for each distinct token in ascending order, the rows that
// carry it in ascending order: uniq, start (len(uniq)+1 offsets into rows)
// and rows, packed into one slice for one upload.
func tokenRows(tokens []int32) (packed []int32, distinct int) {
	rows := make([]int32, len(tokens))
	for i := range rows {
		rows[i] = int32(i)
	}
	sort.SliceStable(rows, func(a, b int) bool { return tokens[rows[a]] < tokens[rows[b]] })
	var uniq, start []int32
	for i, r := range rows {
		if i == 0 || tokens[r] != tokens[rows[i-1]] {
			uniq = append(uniq, tokens[r])
			start = append(start, int32(i))
		}
	}
	start = append(start, int32(len(rows)))
	packed = append(append(uniq, start...), rows...)
	return packed, len(uniq)
}

// EmbedBackward sets dwte[v] to the sum of dy's rows that carry token v (rows
// in order, onto zero) and dwpe[t] to the sum over sequences: one thread owns
// each output element, so there are no atomics and the bits are the CPU's.
func (c *CUDA) EmbedBackward(dwte, dwpe, dy *Tensor, tokens []int32) {
	const op = "embed backward"
	D, T := embedDims(op, dwte, dwpe, dy, tokens)
	wp := c.ptrAny(op, dwte)
	c.memset(wp, int(dwte.Bytes()))
	if dwpe != nil {
		c.memset(c.ptrAny(op, dwpe), int(dwpe.Bytes()))
	}
	if len(tokens) == 0 || D == 0 {
		return
	}
	packed, u := tokenRows(tokens)
	lists := c.upload32(op, unsafe.Pointer(&packed[0]), len(packed))
	start := lists.ptr + devPtr(u)*4
	rows := start + devPtr(u+1)*4
	cb := uint32((D + colBlock - 1) / colBlock)
	c.launch("embed_backward_wte", [3]uint32{uint32(u), cb, 1}, blk(colBlock), 0, wp, c.ptrAny(op, dy), lists.ptr, start, rows, int32(D), dtBits(dwte, dy))
	if dwpe != nil {
		c.launch("embed_backward_wpe", [3]uint32{uint32(min(T, len(tokens))), cb, 1}, blk(colBlock), 0,
			c.ptrAny(op, dwpe), c.ptrAny(op, dy), int32(len(tokens)), int32(T), int32(D), dtBits(dwpe, dy))
	}
	c.alloc.put(lists)
}

// CrossEntropy writes the softmax of each row over its first valid columns
// (0: all; the padding columns get probability 0) and returns the mean over
// rows of -log p[target]: the per-row losses, in float64 with the softmax
// denominator summed in float64, are added on the device in an order fixed
// by the row count, and the sum alone comes to the host.
func (c *CUDA) CrossEntropy(probs, logits *Tensor, targets []int32, valid int) float64 {
	n, V := logits.Rows()
	if len(targets) != n {
		panic(fmt.Sprintf("cross entropy: %d targets for %d rows", len(targets), n))
	}
	mustLen("cross entropy", "probs", probs, n*V)
	valid = validCols("cross entropy", valid, V)
	checkIDs("cross entropy", "target", targets, valid)
	if n == 0 {
		return 0
	}
	ids := c.uploadInts("cross entropy", targets)
	loss := c.tmp(2*n + 2) // doubles: the rows', then their sum
	sum := loss.ptr + devPtr(n)*8
	c.launch("crossentropy_forward", rowGrid(n), blk(rowBlock), 0, c.ptrAny("cross entropy", probs), loss.ptr,
		c.ptrAny("cross entropy", logits), ids.ptr, int32(n), int32(V), int32(valid), dtBits(probs, logits))
	c.launch("sum_f64", blk(1), blk(elemBlock), 0, sum, loss.ptr, int32(n))
	var total float64
	c.download(unsafe.Pointer(&total), sum, 8)
	c.alloc.put(ids)
	c.alloc.put(loss)
	return total / float64(n)
}

// CrossEntropyBackward computes dlogits = scale·(p - onehot(target))/N.
func (c *CUDA) CrossEntropyBackward(dlogits, probs *Tensor, targets []int32, scale float32) {
	const op = "cross entropy backward"
	n, V := probs.Rows()
	mustLen(op, "dlogits", dlogits, n*V)
	if len(targets) != n {
		panic(fmt.Sprintf("cross entropy backward: %d targets for %d rows", len(targets), n))
	}
	checkIDs(op, "target", targets, V)
	if n == 0 {
		return
	}
	ids := c.uploadInts(op, targets)
	grid := [3]uint32{uint32(n), uint32(min((V+elemBlock*rowChunk-1)/(elemBlock*rowChunk), 64)), 1}
	c.launch("crossentropy_backward", grid, blk(elemBlock), 0, c.ptrAny(op, dlogits), c.ptrAny(op, probs), ids.ptr, int32(V), scale/float32(n),
		dtBits(dlogits, probs))
	c.alloc.put(ids)
}

// operand is one tensor argument of an elementwise kernel, named for errors.
type operand struct {
	name string
	t    *Tensor
}

// elementwise checks that every operand holds n elements and runs kernel over
// them, one thread per element: the operands' pointers in order, then n and
// their dtypes (dtBits).
func (c *CUDA) elementwise(op, kernel string, n int, ops ...operand) {
	args := make([]any, 0, len(ops)+2)
	ts := make([]*Tensor, len(ops))
	for i, o := range ops {
		mustLen(op, o.name, o.t, n)
		args = append(args, c.ptrAny(op, o.t))
		ts[i] = o.t
	}
	if n > 0 {
		c.launch(kernel, c.chunkGrid(n), blk(elemBlock), 0, append(args, int64(n), dtBits(ts...))...)
	}
}
