package models

import (
	"fmt"
	"sort"
)

// Sharded is an optimizer that keeps state for, and updates, only the
// elements [Lo, Hi) of a stage's flat parameter layout: one data-parallel
// replica's part under ZeRO stage 1. Every optimizer here updates each
// element from that element's value, gradient and state alone, so a part
// updated on its own gets the bits the whole update gives it; the replicas
// then all-gather the parameters. Parameters stay whole on every replica
// (training is float32: the parameter is its own master copy).
type Sharded struct {
	inner  Optimizer
	lo, hi int
	pieces []*Param // the part of each parameter within [lo, hi), in order
	whole  map[string]*Param
}

// NewSharded wraps inner to own [lo, hi) of the layout of params (a stage's
// Params, each at its Offset).
func NewSharded(inner Optimizer, params []*Param, lo, hi int) *Sharded {
	o := &Sharded{inner: inner, lo: lo, hi: hi, whole: map[string]*Param{}}
	for _, p := range params {
		a, b := max(lo, p.off), min(hi, p.off+p.Numel())
		if a >= b {
			continue
		}
		spec := p.ParamSpec
		spec.Shape = []int{b - a}
		o.pieces = append(o.pieces, &Param{ParamSpec: spec, off: a, be: p.be,
			Value: p.Value.Reshape(p.Numel()).View(a-p.off, b-a), Grad: p.Grad.Reshape(p.Numel()).View(a-p.off, b-a)})
		o.whole[p.Name] = p
	}
	return o
}

// Range is the part of the layout this optimizer owns.
func (o *Sharded) Range() (lo, hi int) { return o.lo, o.hi }

// Step updates the owned part of params, which must be the parameters the
// optimizer was made for.
func (o *Sharded) Step(params []*Param, lr, gradScale float64) error {
	for _, p := range params {
		if w := o.whole[p.Name]; w != nil && w != p {
			return fmt.Errorf("sharded optimizer: parameter %s is not the one it was made for", p.Name)
		}
	}
	return o.inner.Step(o.pieces, lr, gradScale)
}

// State is the owned part's state: each parameter's values are those of
// its piece within [Lo, Hi) (FlatState lays them out).
func (o *Sharded) State() OptimizerState { return o.inner.State() }

// SetState restores the owned part from a whole state (every parameter's
// values at full length, as a checkpoint holds them).
func (o *Sharded) SetState(st OptimizerState) error {
	part := OptimizerState{Kind: st.Kind, Steps: st.Steps, Slots: map[string]map[string][]float32{}}
	for slot, vals := range st.Slots {
		part.Slots[slot] = map[string][]float32{}
		for _, pc := range o.pieces {
			w := o.whole[pc.Name]
			v, ok := vals[pc.Name]
			if !ok {
				continue
			}
			if len(v) != w.Numel() {
				return fmt.Errorf("%s state: %s has %d values in %s, want %d", st.Kind, pc.Name, len(v), slot, w.Numel())
			}
			part.Slots[slot][pc.Name] = v[pc.off-w.off : pc.off-w.off+pc.Numel()]
		}
	}
	return o.inner.SetState(part)
}

// StateBytes is the owned part's state bytes.
func (o *Sharded) StateBytes() int64 { return o.inner.StateBytes() }

// FlatState lays out, per slot, the values of st (pieces of the stage's
// parameters within [lo, hi), as Sharded.State gives them, or whole
// parameters) as one vector of the elements [lo, hi) of the stage's flat
// layout; a parameter missing from a slot (not stepped yet) is zeros.
func (s *Stage) FlatState(st OptimizerState, lo, hi int) (map[string][]float32, error) {
	out := map[string][]float32{}
	for _, slot := range sortedSlots(st) {
		flat := make([]float32, hi-lo)
		for _, p := range s.params {
			a, b := max(lo, p.off), min(hi, p.off+p.Numel())
			v, ok := st.Slots[slot][p.Name]
			if a >= b || !ok {
				continue
			}
			switch len(v) {
			case b - a:
			case p.Numel():
				v = v[a-p.off : b-p.off]
			default:
				return nil, fmt.Errorf("stage %d: optimizer slot %s has %d values for %s, neither its %d nor the %d within [%d,%d)", s.index, slot, len(v), p.Name, p.Numel(), b-a, lo, hi)
			}
			copy(flat[a-lo:], v)
		}
		out[slot] = flat
	}
	return out, nil
}

// StateFromFlat is the whole state of the stage's parameters from one
// vector per slot over the whole flat layout (FlatState's, of [0, n)).
func (s *Stage) StateFromFlat(kind string, steps int, flat map[string][]float32) (OptimizerState, error) {
	st := OptimizerState{Kind: kind, Steps: steps, Slots: map[string]map[string][]float32{}}
	for slot, v := range flat {
		if len(v) != s.grad.Len() {
			return st, fmt.Errorf("stage %d: optimizer slot %s has %d values, the stage %d", s.index, slot, len(v), s.grad.Len())
		}
		st.Slots[slot] = map[string][]float32{}
		for _, p := range s.params {
			st.Slots[slot][p.Name] = v[p.off : p.off+p.Numel() : p.off+p.Numel()]
		}
	}
	return st, nil
}

// sortedSlots is st's slot names in order, so that every replica sends its
// slots in the same order.
func sortedSlots(st OptimizerState) []string {
	names := make([]string, 0, len(st.Slots))
	for n := range st.Slots {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
