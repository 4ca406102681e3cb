package models

import (
	"fmt"
	"math"
	"slices"
	"sort"

	"github.com/pplaunch/pplaunch/models/tensor"
)

// Optimizer updates a stage's parameters from their accumulated gradients.
type Optimizer interface {
	// Step applies one update with learning rate lr to gradients multiplied by
	// gradScale (the clipping factor from ClipScale; 1 for none).
	Step(params []*Param, lr, gradScale float64) error
	// State exports a copy of the optimizer's state for a checkpoint; SetState
	// restores one (copying it).
	State() OptimizerState
	SetState(OptimizerState) error
}

// OptimizerState is an optimizer's state: per slot ("adam_m" and "adam_v" for
// AdamW, "momentum" for SGD, as models/checkpoint names them) the values for
// each parameter by name, and the number of steps taken.
type OptimizerState struct {
	Kind  string
	Steps int
	Slots map[string]map[string][]float32
}

// Optimizer state slots.
const (
	SlotAdamM    = "adam_m"
	SlotAdamV    = "adam_v"
	SlotMomentum = "momentum"
)

// exportSlots deep-copies per-parameter slices into a slot.
func exportSlots(src map[string][]float32) map[string][]float32 {
	dst := make(map[string][]float32, len(src))
	for name, v := range src {
		dst[name] = slices.Clone(v)
	}
	return dst
}

// importSlots checks a state against the expected kind and slots and copies it.
func importSlots(st OptimizerState, kind string, slots ...string) ([]map[string][]float32, error) {
	if st.Kind != kind {
		return nil, fmt.Errorf("optimizer state is %q, want %s", st.Kind, kind)
	}
	for slot := range st.Slots {
		if !slices.Contains(slots, slot) {
			return nil, fmt.Errorf("%s state: unexpected slot %q", kind, slot)
		}
	}
	out := make([]map[string][]float32, len(slots))
	for i, slot := range slots {
		out[i] = exportSlots(st.Slots[slot])
		if len(out[i]) != len(out[0]) {
			return nil, fmt.Errorf("%s state: %d parameters in %s, %d in %s", kind, len(out[0]), slots[0], len(out[i]), slot)
		}
		for name, v := range out[i] {
			if other := out[0][name]; len(other) != len(v) {
				return nil, fmt.Errorf("%s state: %s has %d values in %s and %d in %s", kind, name, len(other), slots[0], len(v), slot)
			}
		}
	}
	return out, nil
}

// optGrain is the block of elements one task updates.
const optGrain = 1 << 14

// AdamW is Adam with decoupled weight decay, as torch.optim.AdamW: decay
// multiplies a parameter by (1 - lr·WeightDecay) before the Adam update, and
// applies only to parameters with Decay set (matrices and embeddings).
type AdamW struct {
	Beta1, Beta2, Eps, WeightDecay float64
	steps                          int
	m, v                           map[string][]float32
}

// NewAdamW returns AdamW with GPT-2 training's usual settings (β 0.9, 0.95,
// eps 1e-8) and the given weight decay.
func NewAdamW(weightDecay float64) *AdamW {
	return &AdamW{Beta1: 0.9, Beta2: 0.95, Eps: 1e-8, WeightDecay: weightDecay,
		m: map[string][]float32{}, v: map[string][]float32{}}
}

// Step updates every parameter in params (each element independently).
func (o *AdamW) Step(params []*Param, lr, gradScale float64) error {
	o.steps++
	bc1 := 1 - math.Pow(o.Beta1, float64(o.steps))
	bc2 := math.Sqrt(1 - math.Pow(o.Beta2, float64(o.steps)))
	for _, p := range params {
		m, v := o.m[p.Name], o.v[p.Name]
		if m == nil {
			m, v = make([]float32, p.Numel()), make([]float32, p.Numel())
			o.m[p.Name], o.v[p.Name] = m, v
		}
		decay := 1.0
		if p.Decay {
			decay = 1 - lr*o.WeightDecay
		}
		w, g := p.Value.Data, p.Grad.Data
		// float32 arithmetic, as torch's CPU AdamW on float32 parameters.
		b1, b2 := float32(o.Beta1), float32(o.Beta2)
		c1, c2 := 1-b1, 1-b2
		gs, dec, step := float32(gradScale), float32(decay), float32(lr/bc1)
		ibc2, eps := float32(1/bc2), float32(o.Eps)
		tensor.ParallelRange(len(w), optGrain, func(lo, hi int) {
			ws, gs_, ms, vs := w[lo:hi], g[lo:hi], m[lo:hi], v[lo:hi]
			for i, gi := range gs_ {
				gi *= gs
				mi := b1*ms[i] + c1*gi
				vi := b2*vs[i] + c2*gi*gi
				ms[i], vs[i] = mi, vi
				ws[i] = ws[i]*dec - step*mi/(float32(math.Sqrt(float64(vi)))*ibc2+eps)
			}
		})
	}
	return nil
}

// State exports a copy of the moments.
func (o *AdamW) State() OptimizerState {
	return OptimizerState{Kind: "adamw", Steps: o.steps,
		Slots: map[string]map[string][]float32{SlotAdamM: exportSlots(o.m), SlotAdamV: exportSlots(o.v)}}
}

// SetState restores a copy of the moments.
func (o *AdamW) SetState(st OptimizerState) error {
	sl, err := importSlots(st, "adamw", SlotAdamM, SlotAdamV)
	if err != nil {
		return err
	}
	o.steps, o.m, o.v = st.Steps, sl[0], sl[1]
	return nil
}

// SGD is stochastic gradient descent with momentum, as torch.optim.SGD
// (no dampening; weight decay added to the gradient for Decay parameters).
type SGD struct {
	Momentum, WeightDecay float64
	steps                 int
	buf                   map[string][]float32
}

// NewSGD returns SGD with the given momentum and weight decay.
func NewSGD(momentum, weightDecay float64) *SGD {
	return &SGD{Momentum: momentum, WeightDecay: weightDecay, buf: map[string][]float32{}}
}

// Step updates every parameter in params.
func (o *SGD) Step(params []*Param, lr, gradScale float64) error {
	o.steps++
	for _, p := range params {
		b, fresh := o.buf[p.Name], false
		if b == nil {
			b, fresh = make([]float32, p.Numel()), true
			o.buf[p.Name] = b
		}
		wd := 0.0
		if p.Decay {
			wd = o.WeightDecay
		}
		w, g := p.Value.Data, p.Grad.Data
		tensor.ParallelRange(len(w), optGrain, func(lo, hi int) {
			for i := lo; i < hi; i++ {
				gi := float64(g[i])*gradScale + wd*float64(w[i])
				if !fresh {
					gi += o.Momentum * float64(b[i])
				}
				b[i] = float32(gi)
				w[i] = float32(float64(w[i]) - lr*gi)
			}
		})
	}
	return nil
}

// State exports a copy of the momentum buffers.
func (o *SGD) State() OptimizerState {
	return OptimizerState{Kind: "sgd", Steps: o.steps,
		Slots: map[string]map[string][]float32{SlotMomentum: exportSlots(o.buf)}}
}

// SetState restores a copy of the momentum buffers.
func (o *SGD) SetState(st OptimizerState) error {
	sl, err := importSlots(st, "sgd", SlotMomentum)
	if err != nil {
		return err
	}
	o.steps, o.buf = st.Steps, sl[0]
	return nil
}

// NewOptimizer returns "adamw" or "sgd" (momentum 0.9) with the given weight decay.
func NewOptimizer(name string, weightDecay float64) (Optimizer, error) {
	switch name {
	case "adamw":
		return NewAdamW(weightDecay), nil
	case "sgd":
		return NewSGD(0.9, weightDecay), nil
	}
	return nil, fmt.Errorf("optimizer %q: want adamw or sgd", name)
}

// LRSchedule is linear warmup to Peak over Warmup steps, then cosine decay to
// Min at step Total, then Min.
type LRSchedule struct {
	Peak, Min     float64
	Warmup, Total int
}

// At is the learning rate for step (counting from 0).
func (s LRSchedule) At(step int) float64 {
	if step < s.Warmup {
		return s.Peak * float64(step+1) / float64(s.Warmup)
	}
	if step >= s.Total || s.Total <= s.Warmup {
		return s.Min
	}
	frac := float64(step-s.Warmup) / float64(s.Total-s.Warmup)
	return s.Min + 0.5*(s.Peak-s.Min)*(1+math.Cos(math.Pi*frac))
}

// GradSumSquares gives each parameter's Σ grad² by name, leaving out tied
// copies (their gradient is the same sum as the parameter they copy).
func GradSumSquares(params []*Param) map[string]float64 {
	m := map[string]float64{}
	for _, p := range params {
		if p.TiedTo == "" {
			m[p.Name] = p.GradSumSquares()
		}
	}
	return m
}

// GlobalNorm combines per-parameter sums of squares from all stages and
// replicas in the canonical order (sorted by name), so every rank computes the
// same bits.
func GlobalNorm(sums map[string]float64) float64 {
	names := make([]string, 0, len(sums))
	for n := range sums {
		names = append(names, n)
	}
	sort.Strings(names)
	var s float64
	for _, n := range names {
		s += sums[n]
	}
	return math.Sqrt(s)
}

// ClipScale is the factor that brings a gradient of global norm down to
// maxNorm (1 when it is already within it, or when maxNorm ≤ 0 disables clipping).
func ClipScale(norm, maxNorm float64) float64 {
	if maxNorm <= 0 || norm <= maxNorm {
		return 1
	}
	return maxNorm / (norm + 1e-6)
}
