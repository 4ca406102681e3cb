package models

import (
	"slices"

	"github.com/pplaunch/pplaunch/models/tensor"
)

// arena recycles a stage's activation buffers between micro-batches: a step
// then allocates (and the kernel zero-fills) almost nothing. Buffers come back
// uncleared, which is safe because every backend operation overwrites its
// outputs whole. Storage comes from the arena's backend (host tensors when it
// has none). Activations are of the arena's dtype (bfloat16 in bf16
// training); statistics are always float32.
type arena struct {
	be   tensor.Backend
	act  tensor.DType
	free map[storeKey][]*tensor.Tensor // flat storage tensors, by dtype and length
}

// storeKey is the dtype and length of a flat storage tensor.
type storeKey struct {
	dt tensor.DType
	n  int
}

// newArena recycles float32 host tensors; newArenaOn those of a backend,
// with activations of dtype act.
func newArena() *arena { return newArenaOn(nil, tensor.Float32) }
func newArenaOn(be tensor.Backend, act tensor.DType) *arena {
	return &arena{be: be, act: act, free: map[storeKey][]*tensor.Tensor{}}
}

// alloc hands out buffers for one micro-batch and remembers them, so that they
// return to the arena together when the micro-batch is done.
type alloc struct {
	a     *arena
	owned []owned
}

// owned is a tensor handed out and the flat storage it views.
type owned struct{ t, store *tensor.Tensor }

// new is an activation of the arena's dtype.
func (al *alloc) new(shape ...int) *tensor.Tensor { return al.of(al.a.act, shape...) }

// stat is a float32 tensor: per-row statistics, kept in float32 in every
// precision.
func (al *alloc) stat(shape ...int) *tensor.Tensor { return al.of(tensor.Float32, shape...) }

// like is a tensor of t's shape and dtype.
func (al *alloc) like(t *tensor.Tensor) *tensor.Tensor { return al.of(t.DType(), t.Shape...) }

func (al *alloc) of(dt tensor.DType, shape ...int) *tensor.Tensor {
	n := 1
	for _, d := range shape {
		n *= d
	}
	k := storeKey{dt, n}
	var store *tensor.Tensor
	switch l := al.a.free[k]; {
	case len(l) > 0:
		store = l[len(l)-1]
		al.a.free[k] = l[:len(l)-1]
	case al.a.be != nil:
		store = al.a.be.AllocAs(dt, n)
	default:
		store = tensor.NewAs(dt, n)
	}
	t := store.Reshape(shape...)
	al.owned = append(al.owned, owned{t, store})
	return t
}

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
		k := storeKey{o.store.DType(), o.store.Len()}
		al.a.free[k] = append(al.a.free[k], o.store)
		o.t.Detach()
	}
	al.owned = al.owned[:0]
}
