package tensor

import (
	"sort"
	"unsafe"
)

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
