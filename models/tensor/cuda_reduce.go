package tensor

import "unsafe"

// colChunk is the number of rows whose column sums the first pass of a column
// reduction adds; the second pass adds the chunks in order.
const colChunk = 64

func colGrid(chunks, cols int) [3]uint32 {
	return [3]uint32{uint32(max(chunks, 1)), uint32((cols + colBlock - 1) / colBlock), 1}
}

// colSums sets s[j] = Σ_r m[r,j] in two fixed passes (float32 partial sums).
func (c *CUDA) colSums(s, m *Tensor, rows, cols int) {
	if cols == 0 {
		return
	}
	const op = "column sums"
	sp, mp := c.ptrAny(op, s), c.ptrAny(op, m)
	chunks := (rows + colChunk - 1) / colChunk
	part := c.tmp(max(chunks, 1) * cols)
	if chunks == 0 {
		c.memset(sp, int(s.Bytes()))
	} else {
		c.launch("colsum_partial", colGrid(chunks, cols), blk(colBlock), 0, part.ptr, mp, int32(rows), int32(cols), int32(colChunk), dtBits(m))
		c.launch("colsum_final", blk((cols+colBlock-1)/colBlock), blk(colBlock), 0, sp, part.ptr, int32(chunks), int32(cols), dtBits(s))
	}
	c.alloc.put(part)
}

// sumsqBlocks is how many blocks the first pass of SumSquares uses for n
// elements: chunks of at least 8 elements per thread, at most 1024 blocks.
// It depends on n alone, which fixes the order of the sum.
func sumsqBlocks(n int) (blocks, chunk int) {
	chunk = max(elemBlock*8, (n+1023)/1024)
	chunk = (chunk + elemBlock - 1) / elemBlock * elemBlock
	return (n + chunk - 1) / chunk, chunk
}

// SumSquares is Σ x² in double: per-block partial sums over fixed chunks, then
// one block adds them in a fixed tree.
func (c *CUDA) SumSquares(t *Tensor) float64 {
	p := c.ptrAny("sum of squares", t)
	n := t.Len()
	if n == 0 {
		return 0
	}
	blocks, chunk := sumsqBlocks(n)
	part := c.tmp(2*blocks + 2) // doubles; the last two floats take the total
	total := part.ptr + devPtr(blocks)*8
	c.launch("sumsq_partial", blk(blocks), blk(elemBlock), 0, part.ptr, p, int64(n), int64(chunk), dtBits(t))
	c.launch("sum_f64", blk(1), blk(elemBlock), 0, total, part.ptr, int32(blocks))
	var s float64
	c.download(unsafe.Pointer(&s), total, 8)
	c.alloc.put(part)
	return s
}

// SumSquaresAll sums every tensor's squares in two launches (the blocks of
// all tensors, then a block per tensor) and one download.
func (c *CUDA) SumSquaresAll(ts []*Tensor) []float64 {
	const op = "sum of squares"
	var m multiTable
	var which []int // the tensors with elements, in order
	for i, t := range ts {
		p, n := c.ptrAny(op, t), t.Len()
		if n == 0 {
			continue
		}
		blocks, chunk := sumsqBlocks(n)
		m.ptr(p)
		m.i64(int64(n))
		m.i64(int64(chunk))
		m.i32(dtBits(t))
		m.i32(0)
		m.add(blocks)
		which = append(which, i)
	}
	out := make([]float64, len(ts))
	if len(which) == 0 {
		return out
	}
	total := m.blocks()
	tab, first := c.uploadTable(op, &m)
	part := c.tmp(2*total + 2*len(which)) // doubles: the blocks' partials, then the tensors' sums
	sums := part.ptr + devPtr(total)*8
	c.launch("sumsq_multi_partial", blk(total), blk(elemBlock), 0, part.ptr, tab.ptr, first, int32(len(which)))
	c.launch("sumsq_multi_final", blk(len(which)), blk(elemBlock), 0, sums, part.ptr, first)
	got := make([]float64, len(which))
	c.download(unsafe.Pointer(&got[0]), sums, 8*len(got))
	c.alloc.put(tab)
	c.alloc.put(part)
	for j, i := range which {
		out[i] = got[j]
	}
	return out
}
