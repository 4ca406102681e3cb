package tensor

import (
	"fmt"
	"unsafe"
)

// The CPU backend computes every operation in float32 (see Backend). An
// operation given bfloat16 tensors runs its float32 code on float32
// stand-ins: each bfloat16 input widened (exact), each bfloat16 output
// computed in float32 scratch and rounded once, to nearest even, when the
// operation is done; the operands of a matrix product are rounded to
// bfloat16 first where either is bfloat16. That is the contract itself, so
// the float32 code path (its sums, their order, its threading) is the one
// that gives the bits in both precisions.

// mustF32 panics unless every tensor named is float32 (nil ones skipped):
// statistics, parameters, their gradients and optimizer state stay float32.
func mustF32(op string, names []string, ts ...*Tensor) {
	for i, t := range ts {
		if t != nil && t.dtype != Float32 {
			panic(fmt.Sprintf("%s: %s is %v, want float32 (statistics, parameters, their gradients and optimizer state are float32 in every precision)", op, names[i], t.dtype))
		}
	}
}

// mixed holds one operation's float32 stand-ins for its bfloat16 tensors.
// A storage seen twice (an output that aliases an input) has one stand-in.
type mixed struct {
	c    *CPU
	bufs [][]float32
	by   map[*uint16]*standIn
	outs []*standIn
}

// standIn is the float32 tensor computed on in place of a bfloat16 one.
type standIn struct {
	src, wide *Tensor
	widened   bool // holds src's values
	write     bool // rounded back into src when the operation is done
}

// mix returns the stand-ins of an operation over ts, or nil when every one
// is float32 (the operation then runs on the tensors themselves).
func (c *CPU) mix(ts ...*Tensor) *mixed {
	if !anyBF16(ts...) {
		return nil
	}
	return &mixed{c: c, by: map[*uint16]*standIn{}}
}

// buffer is n float32s of scratch, kept to be released by done.
func (m *mixed) buffer(n int) []float32 {
	b := m.c.scratch(n)
	m.bufs = append(m.bufs, b)
	return b
}

// standIn finds or makes the stand-in of the bfloat16 tensor t.
func (m *mixed) standIn(t *Tensor) *standIn {
	if len(t.Half) == 0 {
		return &standIn{src: t, wide: &Tensor{Shape: t.Shape, Data: []float32{}}, widened: true}
	}
	key := unsafe.SliceData(t.Half)
	if s, ok := m.by[key]; ok {
		if s.src.Len() != t.Len() {
			panic(fmt.Sprintf("bf16: tensors %v and %v share storage but not its extent", s.src.Shape, t.Shape))
		}
		return s
	}
	s := &standIn{src: t, wide: &Tensor{Shape: t.Shape, Data: m.buffer(t.Len())}}
	m.by[key] = s
	return s
}

// in is t as an input read at its dtype: t itself when float32, else its
// widened stand-in.
func (m *mixed) in(t *Tensor) *Tensor {
	if t == nil || t.dtype == Float32 {
		return t
	}
	s := m.standIn(t)
	if !s.widened {
		UnpackBF16(s.wide.Data, t.Half)
		s.widened = true
	}
	return s.wide
}

// out is t as an output: t itself when float32, else a stand-in that done
// rounds into t.
func (m *mixed) out(t *Tensor) *Tensor {
	if t == nil || t.dtype == Float32 {
		return t
	}
	s := m.standIn(t)
	if !s.write {
		s.write = true
		m.outs = append(m.outs, s)
	}
	return s.wide
}

// inout is t read and then overwritten (MatMul's c with beta ≠ 0).
func (m *mixed) inout(t *Tensor) *Tensor {
	m.in(t)
	return m.out(t)
}

// operands are the two inputs of a matrix product: where either is
// bfloat16, both are read rounded to bfloat16 (a float32 weight rounded to
// nearest even), so that every product of two is exact in float32.
func (m *mixed) operands(a, b *Tensor) (*Tensor, *Tensor) {
	if !anyBF16(a, b) {
		return a, b
	}
	return m.rounded(a), m.rounded(b)
}

// rounded is t's values rounded to bfloat16, as float32.
func (m *mixed) rounded(t *Tensor) *Tensor {
	if t.dtype == BFloat16 {
		return m.in(t)
	}
	r := &Tensor{Shape: t.Shape, Data: m.buffer(t.Len())}
	parallelRange(t.Len(), optGrain, func(lo, hi int) { RoundBF16s(r.Data[lo:hi], t.Data[lo:hi]) })
	return r
}

// done rounds every output stand-in into its bfloat16 tensor, once, and
// releases the scratch.
func (m *mixed) done() {
	for _, s := range m.outs {
		src, wide := s.src, s.wide
		parallelRange(src.Len(), optGrain, func(lo, hi int) {
			PackBF16(src.Half[lo:hi], wide.Data[lo:hi])
		})
	}
	for _, b := range m.bufs {
		m.c.release(b)
	}
	m.bufs, m.outs = nil, nil
}
