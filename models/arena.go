package models

import (
	"slices"

	"github.com/pplaunch/pplaunch/models/tensor"
)

// arena recycles a stage's activation buffers between micro-batches: a step
// then allocates (and the kernel zero-fills) almost nothing. Buffers come back
// uncleared, which is safe because every backend operation overwrites its
// outputs whole.
type arena struct {
	free map[int][][]float32 // by length
}

func newArena() *arena { return &arena{free: map[int][][]float32{}} }

// alloc hands out buffers for one micro-batch and remembers them, so that they
// return to the arena together when the micro-batch is done.
type alloc struct {
	a     *arena
	owned []*tensor.Tensor
}

func (al *alloc) new(shape ...int) *tensor.Tensor {
	n := 1
	for _, d := range shape {
		n *= d
	}
	var data []float32
	if l := al.a.free[n]; len(l) > 0 {
		data = l[len(l)-1]
		al.a.free[n] = l[:len(l)-1]
	} else {
		data = make([]float32, n)
	}
	t := &tensor.Tensor{Shape: slices.Clone(shape), Data: data}
	al.owned = append(al.owned, t)
	return t
}

func (al *alloc) like(t *tensor.Tensor) *tensor.Tensor { return al.new(t.Shape...) }

// escape hands t to the caller for good: it is never recycled.
func (al *alloc) escape(t *tensor.Tensor) {
	if t == nil {
		return
	}
	for i := len(al.owned) - 1; i >= 0; i-- {
		if al.owned[i] == t {
			al.owned = slices.Delete(al.owned, i, i+1)
			return
		}
	}
}

// release returns every buffer still owned to the arena.
func (al *alloc) release() {
	for _, t := range al.owned {
		al.a.free[len(t.Data)] = append(al.a.free[len(t.Data)], t.Data)
		t.Data = nil
	}
	al.owned = al.owned[:0]
}
