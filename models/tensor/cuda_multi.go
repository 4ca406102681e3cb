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
// kernels cut it, so each tensor gets the same bits. AdamWAll
// (cuda_optim.go) and SumSquaresAll (cuda_reduce.go) fill the table.

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
