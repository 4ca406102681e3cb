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
	// StateBytes is the bytes of optimizer state held now: the buffers
	// allocated on the parameters' backend and restored values not yet
	// uploaded.
	StateBytes() int64
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

// slots holds one optimizer buffer per parameter in the parameter's backend,
// created zeroed or from restored host values on the parameter's first step.
type slots struct {
	live    map[string]*tensor.Tensor
	owner   map[string]tensor.Backend
	pending map[string][]float32 // restored by SetState, uploaded on first use
}

func newSlots() slots {
	return slots{live: map[string]*tensor.Tensor{}, owner: map[string]tensor.Backend{}, pending: map[string][]float32{}}
}

// of returns p's buffer and whether it was just created zeroed.
func (s slots) of(p *Param) (*tensor.Tensor, bool) {
	if t := s.live[p.Name]; t != nil {
		return t, false
	}
	be := p.backend()
	v, restored := s.pending[p.Name]
	var t *tensor.Tensor
	if restored {
		t = be.Alloc(p.Numel())
		be.Upload(t, v)
		delete(s.pending, p.Name)
	} else {
		t = be.Zeros(p.Numel())
	}
	s.live[p.Name], s.owner[p.Name] = t, be
	return t, !restored
}

// export copies every buffer to the host.
func (s slots) export() map[string][]float32 {
	out := exportSlots(s.pending)
	for name, t := range s.live {
		v := make([]float32, t.Len())
		s.owner[name].Download(v, t)
		out[name] = v
	}
	return out
}

// bytes is what the buffers hold, live and pending.
func (s slots) bytes() int64 {
	var n int64
	for _, t := range s.live {
		n += 4 * int64(t.Len())
	}
	for _, v := range s.pending {
		n += 4 * int64(len(v))
	}
	return n
}

// restore replaces the buffers with host values, freeing the live ones.
func (s *slots) restore(vals map[string][]float32) {
	for name, t := range s.live {
		s.owner[name].Free(t)
	}
	*s = newSlots()
	s.pending = vals
}

// AdamW is Adam with decoupled weight decay, as torch.optim.AdamW: decay
// multiplies a parameter by (1 - lr·WeightDecay) before the Adam update, and
// applies only to parameters with Decay set (matrices and embeddings).
type AdamW struct {
	Beta1, Beta2, Eps, WeightDecay float64
	steps                          int
	m, v                           slots
}

// NewAdamW returns AdamW with GPT-2 training's usual settings (β 0.9, 0.95,
// eps 1e-8) and the given weight decay.
func NewAdamW(weightDecay float64) *AdamW {
	return &AdamW{Beta1: 0.9, Beta2: 0.95, Eps: 1e-8, WeightDecay: weightDecay, m: newSlots(), v: newSlots()}
}

// Step updates every parameter in params (each element independently) on the
// parameter's backend, all of a backend's parameters in one AdamWAll.
func (o *AdamW) Step(params []*Param, lr, gradScale float64) error {
	o.steps++
	bc1 := 1 - math.Pow(o.Beta1, float64(o.steps))
	bc2 := math.Sqrt(1 - math.Pow(o.Beta2, float64(o.steps)))
	bes, groups := byBackend(params)
	for i, be := range bes {
		us := make([]tensor.AdamWUpdate, len(groups[i]))
		for j, p := range groups[i] {
			m, _ := o.m.of(p)
			v, _ := o.v.of(p)
			decay := 1.0
			if p.Decay {
				decay = 1 - lr*o.WeightDecay
			}
			// float32 arithmetic, as torch's CPU AdamW on float32 parameters.
			us[j] = tensor.AdamWUpdate{W: p.Value, G: p.Grad, M: m, V: v, H: tensor.AdamWStep{
				Beta1: float32(o.Beta1), Beta2: float32(o.Beta2), GradScale: float32(gradScale),
				Decay: float32(decay), Step: float32(lr / bc1), InvBC2: float32(1 / bc2), Eps: float32(o.Eps)}}
		}
		be.AdamWAll(us)
	}
	return nil
}

// byBackend groups params by the backend that holds them, each group and the
// order of the groups as in params.
func byBackend(params []*Param) ([]tensor.Backend, [][]*Param) {
	var bes []tensor.Backend
	var groups [][]*Param
	at := map[tensor.Backend]int{}
	for _, p := range params {
		be := p.backend()
		i, ok := at[be]
		if !ok {
			i = len(bes)
			at[be] = i
			bes = append(bes, be)
			groups = append(groups, nil)
		}
		groups[i] = append(groups[i], p)
	}
	return bes, groups
}

// State exports a copy of the moments.
func (o *AdamW) State() OptimizerState {
	return OptimizerState{Kind: "adamw", Steps: o.steps,
		Slots: map[string]map[string][]float32{SlotAdamM: o.m.export(), SlotAdamV: o.v.export()}}
}

// StateBytes is the bytes of both moments.
func (o *AdamW) StateBytes() int64 { return o.m.bytes() + o.v.bytes() }

// SetState restores a copy of the moments.
func (o *AdamW) SetState(st OptimizerState) error {
	sl, err := importSlots(st, "adamw", SlotAdamM, SlotAdamV)
	if err != nil {
		return err
	}
	o.steps = st.Steps
	o.m.restore(sl[0])
	o.v.restore(sl[1])
	return nil
}

// SGD is stochastic gradient descent with momentum, as torch.optim.SGD
// (no dampening; weight decay added to the gradient for Decay parameters).
type SGD struct {
	Momentum, WeightDecay float64
	steps                 int
	buf                   slots
}

// NewSGD returns SGD with the given momentum and weight decay.
func NewSGD(momentum, weightDecay float64) *SGD {
	return &SGD{Momentum: momentum, WeightDecay: weightDecay, buf: newSlots()}
}

// Step updates every parameter in params on the parameter's backend.
func (o *SGD) Step(params []*Param, lr, gradScale float64) error {
	o.steps++
	for _, p := range params {
		b, fresh := o.buf.of(p)
		wd := 0.0
		if p.Decay {
			wd = o.WeightDecay
		}
		p.backend().SGD(p.Value, p.Grad, b, tensor.SGDStep{
			GradScale: gradScale, WeightDecay: wd, Momentum: o.Momentum, LR: lr, Fresh: fresh})
	}
	return nil
}

// State exports a copy of the momentum buffers.
func (o *SGD) State() OptimizerState {
	return OptimizerState{Kind: "sgd", Steps: o.steps,
		Slots: map[string]map[string][]float32{SlotMomentum: o.buf.export()}}
}

// StateBytes is the bytes of the momentum buffers.
func (o *SGD) StateBytes() int64 { return o.buf.bytes() }

// SetState restores a copy of the momentum buffers.
func (o *SGD) SetState(st OptimizerState) error {
	sl, err := importSlots(st, "sgd", SlotMomentum)
	if err != nil {
		return err
	}
	o.steps = st.Steps
	o.buf.restore(sl[0])
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
// copies (their gradient is the same sum as the parameter they copy): one
// SumSquaresAll per backend, each sum the bits of Param.GradSumSquares.
func GradSumSquares(params []*Param) map[string]float64 {
	var own []*Param
	for _, p := range params {
		if p.TiedTo == "" {
			own = append(own, p)
		}
	}
	m := map[string]float64{}
	bes, groups := byBackend(own)
	for i, be := range bes {
		grads := make([]*tensor.Tensor, len(groups[i]))
		for j, p := range groups[i] {
			grads[j] = p.Grad
		}
		for j, s := range be.SumSquaresAll(grads) {
			m[groups[i][j].Name] = s
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
