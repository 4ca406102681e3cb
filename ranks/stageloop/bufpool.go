package stageloop

import (
	"fmt"

	"github.com/pplaunch/pplaunch/models/tensor"
)

// bufPool holds the executor's transfer buffers between uses, by shape, all
// of one dtype.
// Receives take from it; finished receives and finished sends give back. A
// shape keeps at most as many buffers as the step has receives of it: a rank
// sends as many tensors as it receives, so without the bound every step would
// add its sends to the pool for good. Buffers come from the stages' backend
// (host tensors when mem is nil); one the pool does not keep goes back to a
// device backend's allocator.
type bufPool struct {
	mem   tensor.Memory
	dt    tensor.DType
	free  map[string][]*tensor.Tensor
	limit map[string]int
	fresh int // buffers allocated because the pool had none (for tests)
}

func newBufPool(limit map[string]int, mem tensor.Memory, dt tensor.DType) *bufPool {
	return &bufPool{mem: mem, dt: dt, free: map[string][]*tensor.Tensor{}, limit: limit}
}

func shapeKey(shape []int) string { return fmt.Sprint(shape) }

func (p *bufPool) get(shape []int) *tensor.Tensor {
	k := shapeKey(shape)
	if l := p.free[k]; len(l) > 0 {
		t := l[len(l)-1]
		l[len(l)-1] = nil
		p.free[k] = l[:len(l)-1]
		return t
	}
	p.fresh++
	if p.mem == nil {
		return tensor.NewAs(p.dt, shape...)
	}
	return p.mem.AllocAs(p.dt, shape...)
}

func (p *bufPool) put(t *tensor.Tensor) {
	if t == nil {
		return
	}
	k := shapeKey(t.Shape)
	if t.DType() == p.dt && len(p.free[k]) < p.limit[k] {
		p.free[k] = append(p.free[k], t)
		return
	}
	p.drop(t)
}

// drop lets go of t: a device tensor goes back to its backend's allocator,
// a host tensor to the garbage collector.
func (p *bufPool) drop(t *tensor.Tensor) {
	if t != nil && !t.OnHost() && p.mem != nil {
		p.mem.Free(t)
	}
}
