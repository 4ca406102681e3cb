package tensor

import (
	"encoding/binary"
	"math"
	"unsafe"
)

// Multi-tensor updates and reductions: one launch over a table of tensors
// (kernels/optim.cu's adamw_tensor, kernels/reduce.cu's sumsq_tensor, laid
// out here byte for byte) followed by first, the prefix sums of the tensors'
// block counts, which the kernels search to find a block's tensor. The table
// goes up in one copy; the work is cut per tensor exactly as the one-tensor
// kernels cut it, so each tensor gets the same bits.

// adamwChunk is the elements one block of adamw_multi updates.
const adamwChunk = elemBlock * 16

// Sizes of the kernels' table entries, in bytes.
const (
	adamwEntry = 80
	sumsqEntry = 32
)

// multiTable packs entries of size bytes each, then first (count + 1 int32s).
type multiTable struct {
	b     []byte
	first []int32
}

func (m *multiTable) ptr(p devPtr) {
	m.b = binary.LittleEndian.AppendUint64(m.b, uint64(p))
}
func (m *multiTable) i64(v int64) { m.b = binary.LittleEndian.AppendUint64(m.b, uint64(v)) }
func (m *multiTable) i32(v int32) { m.b = binary.LittleEndian.AppendUint32(m.b, uint32(v)) }
func (m *multiTable) f32(v float32) {
	m.b = binary.LittleEndian.AppendUint32(m.b, math.Float32bits(v))
}

// add starts a tensor of blocks blocks.
func (m *multiTable) add(blocks int) {
	if len(m.first) == 0 {
		m.first = append(m.first, 0)
	}
	m.first = append(m.first, m.first[len(m.first)-1]+int32(blocks))
}

// blocks is the total of the tensors' blocks.
func (m *multiTable) blocks() int { return int(m.first[len(m.first)-1]) }

// upload copies the table to scratch and returns it with the address of first.
func (c *CUDA) uploadTable(op string, m *multiTable) (*devBlock, devPtr) {
	off := len(m.b)
	for _, f := range m.first {
		m.i32(f)
	}
	for len(m.b)%4 != 0 {
		m.b = append(m.b, 0)
	}
	b := c.upload32(op, unsafe.Pointer(&m.b[0]), len(m.b)/4)
	return b, b.ptr + devPtr(off)
}

// AdamWAll updates every tensor in one launch of adamw_multi.
func (c *CUDA) AdamWAll(us []AdamWUpdate) {
	const op = "adamw"
	var m multiTable
	count := 0
	for _, u := range us {
		n := u.W.Len()
		mustLen(op, "grad", u.G, n)
		mustLen(op, "m", u.M, n)
		mustLen(op, "v", u.V, n)
		if n == 0 {
			continue
		}
		for _, t := range []*Tensor{u.W, u.G, u.M, u.V} {
			m.ptr(c.ptr(op, t))
		}
		m.i64(int64(n))
		h := u.H
		for _, f := range []float32{h.Beta1, h.Beta2, h.GradScale, h.Decay, h.Step, h.InvBC2, h.Eps, 0} {
			m.f32(f)
		}
		m.i64(0)
		m.add((n + adamwChunk - 1) / adamwChunk)
		count++
	}
	if count == 0 {
		return
	}
	tab, first := c.uploadTable(op, &m)
	c.launch("adamw_multi", blk(m.blocks()), blk(elemBlock), 0, tab.ptr, first, int32(count), int64(adamwChunk))
	c.alloc.put(tab)
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
