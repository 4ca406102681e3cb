package models

import (
	"slices"

	"github.com/pplaunch/pplaunch/models/tensor"
)

// arena recycles a stage's activation buffers between micro-batches: a step
// then allocates (and the kernel zero-fills) almost nothing. Buffers come back
// uncleared, which is safe because every backend operation overwrites its
// outputs whole. Storage comes from the arena's backend (host tensors when it
// has none).
type arena struct {
	be   tensor.Backend
	free map[int][]*tensor.Tensor // flat storage tensors, by length
}

// newArena recycles host tensors; newArenaOn those of a backend.
func newArena() *arena                    { return newArenaOn(nil) }
func newArenaOn(be tensor.Backend) *arena { return &arena{be: be, free: map[int][]*tensor.Tensor{}} }

// alloc hands out buffers for one micro-batch and remembers them, so that they
// return to the arena together when the micro-batch is done.
type alloc struct {
	a     *arena
	owned []owned
}

// owned is a tensor handed out and the flat storage it views.
type owned struct{ t, store *tensor.Tensor }

func (al *alloc) new(shape ...int) *tensor.Tensor {
	n := 1
	for _, d := range shape {
		n *= d
	}
	var store *tensor.Tensor
	switch l := al.a.free[n]; {
	case len(l) > 0:
		store = l[len(l)-1]
		al.a.free[n] = l[:len(l)-1]
	case al.a.be != nil:
		store = al.a.be.Alloc(n)
	default:
		store = tensor.New(n)
	}
	t := store.Reshape(shape...)
	al.owned = append(al.owned, owned{t, store})
	return t
}

func (al *alloc) like(t *tensor.Tensor) *tensor.Tensor { return al.new(t.Shape...) }

// escape hands t to the caller for good: it is never recycled.
func (al *alloc) escape(t *tensor.Tensor) {
	if t == nil {
		return
	}
	for i := len(al.owned) - 1; i >= 0; i-- {
		if al.owned[i].t == t {
			al.owned = slices.Delete(al.owned, i, i+1)
			return
		}
	}
}

// release returns every buffer still owned to the arena.
func (al *alloc) release() {
	for _, o := range al.owned {
		n := o.store.Len()
		al.a.free[n] = append(al.a.free[n], o.store)
		o.t.Detach()
	}
	al.owned = al.owned[:0]
}
