package models

import (
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/pplaunch/pplaunch/models/tensor"
)

// StageOptions are a stage's choices beside the model: all but Activations
// leave the numbers it computes as they are.
type StageOptions struct {
	// Seed drives initialisation: each parameter starts from InitValues(seed, name).
	Seed uint64
	// Recompute keeps only the stage's input after forward and recomputes the
	// forward pass during backward (activation recomputation).
	Recompute bool
	// Activations is the dtype of every activation a sublayer outputs (and
	// keeps for the backward) and of every activation gradient, so of what
	// passes between blocks and between stages: Float32, or BFloat16 in
	// bf16 mixed precision (parameters, gradients and optimizer state stay
	// float32; see tensor.Backend).
	Activations tensor.DType
}

// Input is what a stage's Forward reads for one micro-batch of B sequences.
type Input struct {
	Act     *tensor.Tensor // [B, Seq, Width]: every stage but the first
	Tokens  []int32        // B·Seq token ids: the first stage
	Targets []int32        // B·Seq next-token ids: the last stage
}

// Output is what Forward returns.
type Output struct {
	Act  *tensor.Tensor // [B, Seq, Width]: every stage but the last
	Loss float64        // the last stage: mean cross-entropy of the micro-batch, unscaled
}

// Stage is a contiguous slice of a model (stage Index of NumStages) with explicit
// per-micro-batch forward and backward for a pipeline executor. Several
// micro-batches may be in flight; each one's saved activations are kept until
// its backward is done and counted in bytes.
//
// A step is: BeginStep(first, count); for each global micro-batch mb in any
// schedule order, Forward(mb) then either Backward(mb) or BackwardInput(mb)
// followed later by BackwardWeight(mb); then FinishStep, which leaves the summed
// gradient in each Param.Grad. Micro-batch ids are global indices: they fix the
// order in which gradients are added (see Accumulator), so the numbers do not
// depend on the schedule, the cut or the data-parallel width.
//
// The stage keeps references to Input.Act, Tokens and Targets and to the
// gradOut given to backward until that micro-batch's backward completes; callers
// must not modify them meanwhile. A Stage is not safe for concurrent use.
type Stage struct {
	cfg        Config
	be         tensor.Backend
	opts       StageOptions
	index, num int
	firstLayer int
	numLayers  int

	subs   []sublayer
	params []*Param
	byName map[string]*Param
	value  *tensor.Tensor   // flat parameters, viewed by every Param.Value
	grad   *tensor.Tensor   // flat gradient, viewed by every Param.Grad
	pool   []*tensor.Tensor // per-micro-batch gradient buffers for reuse
	arena  *arena

	scale     float32
	mbs       map[int]*mbState
	cur, peak int64
	acc       *Accumulator

	units  []int  // model unit of each sublayer (see Timing)
	timing Timing // nil: off
}

// Pass is the part of a micro-batch's work a Timing call measures.
type Pass uint8

// The passes: forward, input gradient (with a recomputed forward, when the
// stage recomputes), weight gradient.
const (
	PassF Pass = iota
	PassI
	PassW
)

// Timing receives the host time of one sublayer's pass for one micro-batch:
// unit is the model unit the sublayer belongs to (-1 the embedding, 0..L-1
// the blocks, each of which has two sublayers, L the final LayerNorm and
// head), and saved the activation bytes the sublayer keeps after the pass:
// for PassF what the backward needs (without recomputation), for PassI what
// the weight pass still needs, 0 for PassW. On a backend that queues its work
// (CUDA) the host time is the time to queue, not to compute.
type Timing func(unit int, pass Pass, d time.Duration, saved int64)

// SetTiming installs f, or removes the hook with nil (the default: then the
// stage reads no clock).
func (s *Stage) SetTiming(f Timing) { s.timing = f }

type mbState struct {
	in        Input
	al        *alloc
	tapes     []tape
	inputDone bool
	bytes     int64
}

// NewStage builds stage index of a model cut into len(cut) stages, where cut[i]
// is the number of blocks in stage i (from Partition or ParseLayersPerStage).
func NewStage(cfg Config, cut []int, index int, be tensor.Backend, opts StageOptions) (*Stage, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if err := CheckCut(cfg, cut); err != nil {
		return nil, err
	}
	if index < 0 || index >= len(cut) {
		return nil, fmt.Errorf("stage %d of a %d-stage cut does not exist", index, len(cut))
	}
	s := &Stage{cfg: cfg, be: be, opts: opts, index: index, num: len(cut), numLayers: cut[index],
		byName: map[string]*Param{}, scale: 1, mbs: map[int]*mbState{}, arena: newArenaOn(be, opts.Activations)}
	for _, n := range cut[:index] {
		s.firstLayer += n
	}
	lastLayer := s.firstLayer + s.numLayers
	holds := func(unit int) bool {
		return unit >= s.firstLayer && unit < lastLayer ||
			unit == embedUnit && index == 0 || unit == cfg.Layers && index == len(cut)-1
	}
	off := 0
	for _, spec := range cfg.Params() {
		if !holds(spec.Unit) {
			continue
		}
		p := &Param{ParamSpec: spec, off: off, be: be}
		off += spec.Numel()
		s.params = append(s.params, p)
		s.byName[spec.Name] = p
	}
	s.value, s.grad = be.Alloc(off), be.Zeros(off)
	for _, p := range s.params {
		p.Value = s.value.View(p.off, p.Shape...)
		be.Upload(p.Value, InitValues(cfg, opts.Seed, p.ParamSpec))
		p.Grad = s.grad.View(p.off, p.Shape...)
	}
	s.build()
	return s, nil
}

// build lays out the sublayers in order.
func (s *Stage) build() {
	c, P, l := s.cfg, s.byName, s.cfg.layout()
	lin := func(prefix string) linear { return linear{w: P[prefix+".weight"], b: P[prefix+".bias"]} }
	ln := func(prefix string) layerNorm { return layerNorm{g: P[prefix+".weight"], b: P[prefix+".bias"]} }
	if s.index == 0 {
		s.subs = append(s.subs, &embedding{wte: P[l.wte], wpe: P[l.wpe], seq: c.Seq}) // P[""] is nil: no positions
		s.units = append(s.units, embedUnit)
	}
	for i := s.firstLayer; i < s.firstLayer+s.numLayers; i++ {
		p := fmt.Sprintf(l.block, i)
		for _, h := range l.halves {
			var mid midOp = gelu{exact: c.ExactGelu()}
			if h.attention {
				mid = attention{heads: c.Heads}
			}
			s.subs = append(s.subs, &residual{ln: ln(p + h.ln), in: lin(p + h.in), out: lin(p + h.out), mid: mid})
			s.units = append(s.units, i)
		}
	}
	if s.IsLast() {
		s.subs = append(s.subs, &head{ln: ln(l.lnF), w: P[l.lmHead], vocab: c.Vocab})
		s.units = append(s.units, c.Layers)
	}
}

// Index is this stage's position in the cut; NumStages the number of stages.
func (s *Stage) Index() int     { return s.index }
func (s *Stage) NumStages() int { return s.num }
func (s *Stage) IsFirst() bool  { return s.index == 0 }
func (s *Stage) IsLast() bool   { return s.index == s.num-1 }

// Layers returns the first block this stage holds and how many.
func (s *Stage) Layers() (first, count int) { return s.firstLayer, s.numLayers }

// Config is the model's configuration.
func (s *Stage) Config() Config { return s.cfg }

// Compute is the compute backend the stage runs on (--device).
func (s *Stage) Compute() tensor.Backend { return s.be }

// Params lists the stage's parameters in model order.
func (s *Stage) Params() []*Param { return s.params }

// Param finds a parameter by name (nil if this stage does not hold it).
func (s *Stage) Param(name string) *Param { return s.byName[name] }

// GradBuffer is the flat gradient of all the stage's parameters in Params order
// (each Param.Grad is a view into it), for data-parallel all-reduce, as host
// memory: nil on a device backend (use GradTensor).
func (s *Stage) GradBuffer() []float32 { return s.grad.Data }

// GradTensor is the flat gradient as a tensor of the stage's backend.
func (s *Stage) GradTensor() *tensor.Tensor { return s.grad }

// ValueTensor is the flat parameters in the gradient's layout (Params order,
// each at its Offset), as a tensor of the stage's backend: what the
// data-parallel replicas all-gather after a sharded optimizer step.
func (s *Stage) ValueTensor() *tensor.Tensor { return s.value }

// ActDType is the dtype of the activations between stages and of their
// gradients (StageOptions.Activations).
func (s *Stage) ActDType() tensor.DType { return s.opts.Activations }

// ActShape is the shape of the activations between stages for a micro-batch of
// batch sequences.
func (s *Stage) ActShape(batch int) []int { return []int{batch, s.cfg.Seq, s.cfg.Width} }

// SetLossScale sets the factor the loss gradient starts from (the executor uses
// 1/global micro-batches so the summed gradient is that of the mean loss).
func (s *Stage) SetLossScale(scale float32) { s.scale = scale }

// ActivationBytes is the size of saved activations now held, over all
// micro-batches in flight; PeakActivationBytes the most held since ResetPeak.
func (s *Stage) ActivationBytes() int64     { return s.cur }
func (s *Stage) PeakActivationBytes() int64 { return s.peak }
func (s *Stage) ResetPeak()                 { s.peak = s.cur }

// InFlight lists the micro-batches whose backward is not complete, in order.
func (s *Stage) InFlight() []int {
	ids := make([]int, 0, len(s.mbs))
	for mb := range s.mbs {
		ids = append(ids, mb)
	}
	sort.Ints(ids)
	return ids
}

// BeginStep starts accumulating gradients for global micro-batches
// first..first+count-1 (this replica's share of the step).
func (s *Stage) BeginStep(first, count int) error {
	if count < 1 {
		return fmt.Errorf("stage %d: begin step with %d micro-batches", s.index, count)
	}
	if len(s.mbs) > 0 {
		return fmt.Errorf("stage %d: begin step with micro-batches %v still in flight", s.index, s.InFlight())
	}
	if s.acc != nil {
		for _, b := range s.acc.nodes {
			s.pool = append(s.pool, b)
		}
	}
	s.acc = NewTensorAccumulator(s.be, first, count, func(b *tensor.Tensor) { s.pool = append(s.pool, b) })
	return nil
}

// FinishStep checks every micro-batch of the step was accumulated and writes
// the sum into each Param.Grad.
func (s *Stage) FinishStep() error {
	if s.acc == nil {
		return fmt.Errorf("stage %d: finish step without BeginStep", s.index)
	}
	sum, err := s.acc.SumTensor()
	if err != nil {
		return fmt.Errorf("stage %d: %w", s.index, err)
	}
	s.be.Copy(s.grad, sum)
	s.pool = append(s.pool, sum)
	s.acc = nil
	return nil
}

func (s *Stage) errorf(op string, mb int, format string, args ...any) error {
	return fmt.Errorf("stage %d: %s mb=%d: %s", s.index, op, mb, fmt.Sprintf(format, args...))
}

// checkInput validates a micro-batch's input against the model and returns B.
func (s *Stage) checkInput(mb int, in Input) (int, error) {
	T, D, V := s.cfg.Seq, s.cfg.Width, s.cfg.Vocab
	var B int
	if s.IsFirst() {
		if len(in.Tokens) == 0 || len(in.Tokens)%T != 0 {
			return 0, s.errorf("forward", mb, "%d tokens is not a whole number of sequences of %d", len(in.Tokens), T)
		}
		B = len(in.Tokens) / T
		if i := slices.IndexFunc(in.Tokens, func(t int32) bool { return t < 0 || int(t) >= V }); i >= 0 {
			return 0, s.errorf("forward", mb, "token %d at %d outside vocabulary of %d", in.Tokens[i], i, V)
		}
	} else {
		a := in.Act
		if a == nil || len(a.Shape) != 3 || a.Shape[1] != T || a.Shape[2] != D || a.Shape[0] < 1 || a.Len() != a.Shape[0]*T*D {
			shape := "none"
			if a != nil {
				shape = fmt.Sprint(a.Shape)
			}
			return 0, s.errorf("forward", mb, "activation shape %s, want [B %d %d]", shape, T, D)
		}
		B = a.Shape[0]
		if a.DType() != s.opts.Activations {
			return 0, s.errorf("forward", mb, "activation is %v, want %v (the stage's activation dtype)", a.DType(), s.opts.Activations)
		}
	}
	if s.IsLast() {
		if len(in.Targets) != B*T {
			return 0, s.errorf("forward", mb, "%d targets for %d positions", len(in.Targets), B*T)
		}
		if i := slices.IndexFunc(in.Targets, func(t int32) bool { return t < 0 || int(t) >= V }); i >= 0 {
			return 0, s.errorf("forward", mb, "target %d at %d outside vocabulary of %d", in.Targets[i], i, V)
		}
	}
	return B, nil
}

// run does the forward pass over all sublayers, returning tapes and the
// output; with a Timing hook each sublayer's time goes to it as pass.
func (s *Stage) run(in Input, al *alloc, pass Pass) ([]tape, Output) {
	fl := &flow{x: in.Act, tokens: in.Tokens, targets: in.Targets, al: al}
	tapes := make([]tape, len(s.subs))
	for i, sl := range s.subs {
		if s.timing == nil {
			tapes[i] = sl.forward(s.be, fl)
			continue
		}
		t0 := time.Now()
		tapes[i] = sl.forward(s.be, fl)
		s.timing(s.units[i], pass, time.Since(t0), tapes[i].bytes())
	}
	if s.IsLast() {
		return tapes, Output{Loss: fl.loss}
	}
	return tapes, Output{Act: fl.x}
}

func tapeBytes(ts []tape) int64 {
	var n int64
	for _, t := range ts {
		n += t.bytes()
	}
	return n
}

func (s *Stage) setBytes(st *mbState, n int64) {
	s.cur += n - st.bytes
	st.bytes = n
	s.peak = max(s.peak, s.cur)
}

// Forward runs micro-batch mb (a global index) through the stage. The output
// activation is a tensor of the stage's backend, the caller's from now on (on
// a device backend, give it back with Backend().Free when it is sent or used).
func (s *Stage) Forward(mb int, in Input) (Output, error) {
	if _, ok := s.mbs[mb]; ok {
		return Output{}, s.errorf("forward", mb, "already in flight")
	}
	if _, err := s.checkInput(mb, in); err != nil {
		return Output{}, err
	}
	st := &mbState{in: in, al: &alloc{a: s.arena}}
	tapes, out := s.run(in, st.al, PassF)
	st.al.escape(out.Act)
	s.mbs[mb] = st
	if s.opts.Recompute {
		s.setBytes(st, tapeBytes(tapes)) // the peak includes the forward itself
		s.setBytes(st, sizeOf(in.Act)+4*int64(len(in.Tokens)+len(in.Targets)))
		st.al.release()
	} else {
		st.tapes = tapes
		s.setBytes(st, tapeBytes(tapes))
	}
	return out, nil
}

// BackwardInput computes the gradient for the stage's input (a tensor of the
// stage's backend that the caller owns, as Forward's output) from gradOut (nil
// on the last stage, which starts from the loss scale) and keeps what
// BackwardWeight needs. The first stage returns nil.
func (s *Stage) BackwardInput(mb int, gradOut *tensor.Tensor) (*tensor.Tensor, error) {
	st, ok := s.mbs[mb]
	switch {
	case !ok:
		return nil, s.errorf("backward", mb, "no forward in flight")
	case st.inputDone:
		return nil, s.errorf("backward", mb, "input gradient already computed")
	case s.IsLast() && gradOut != nil:
		return nil, s.errorf("backward", mb, "the last stage takes no output gradient (it starts from the loss)")
	}
	if !s.IsLast() {
		var B int
		if st.in.Act != nil {
			B = st.in.Act.Shape[0]
		} else {
			B = len(st.in.Tokens) / s.cfg.Seq
		}
		if gradOut == nil || !slices.Equal(gradOut.Shape, s.ActShape(B)) {
			shape := "none"
			if gradOut != nil {
				shape = fmt.Sprint(gradOut.Shape)
			}
			return nil, s.errorf("backward", mb, "output gradient shape %s, want %v", shape, s.ActShape(B))
		}
		if gradOut.DType() != s.opts.Activations {
			return nil, s.errorf("backward", mb, "output gradient is %v, want %v (the stage's activation dtype)", gradOut.DType(), s.opts.Activations)
		}
	}
	if st.tapes == nil {
		st.tapes, _ = s.run(st.in, st.al, PassI)
		s.setBytes(st, st.bytes+tapeBytes(st.tapes))
	}
	d := gradOut
	for i := len(st.tapes) - 1; i >= 0; i-- {
		if s.timing == nil {
			d = st.tapes[i].backwardInput(s.be, st.al, d, s.scale)
			continue
		}
		t0 := time.Now()
		d = st.tapes[i].backwardInput(s.be, st.al, d, s.scale)
		s.timing(s.units[i], PassI, time.Since(t0), st.tapes[i].bytes())
	}
	st.al.escape(d)
	st.inputDone = true
	s.setBytes(st, tapeBytes(st.tapes))
	return d, nil
}

// BackwardWeight computes mb's weight gradients into a buffer of its own and
// hands it to the step's accumulator; mb's saved activations are released.
func (s *Stage) BackwardWeight(mb int) error {
	st, ok := s.mbs[mb]
	switch {
	case !ok:
		return s.errorf("backward weight", mb, "no forward in flight")
	case !st.inputDone:
		return s.errorf("backward weight", mb, "input gradient not computed yet")
	case s.acc == nil:
		return s.errorf("backward weight", mb, "no step begun (call BeginStep)")
	}
	g := s.buffer()
	for i, t := range st.tapes {
		if s.timing == nil {
			t.backwardWeight(s.be, gradTensor{g})
			continue
		}
		t0 := time.Now()
		t.backwardWeight(s.be, gradTensor{g})
		s.timing(s.units[i], PassW, time.Since(t0), 0)
	}
	if err := s.acc.AddTensor(mb, g); err != nil {
		s.pool = append(s.pool, g)
		return fmt.Errorf("stage %d: %w", s.index, err)
	}
	s.setBytes(st, 0)
	st.al.release()
	delete(s.mbs, mb)
	return nil
}

// Backward is BackwardInput followed by BackwardWeight.
func (s *Stage) Backward(mb int, gradOut *tensor.Tensor) (*tensor.Tensor, error) {
	d, err := s.BackwardInput(mb, gradOut)
	if err != nil {
		return nil, err
	}
	return d, s.BackwardWeight(mb)
}

// buffer returns a per-micro-batch gradient buffer (contents undefined: every
// parameter's slot is overwritten by its layer).
func (s *Stage) buffer() *tensor.Tensor {
	if n := len(s.pool); n > 0 {
		b := s.pool[n-1]
		s.pool = s.pool[:n-1]
		return b
	}
	return s.be.Alloc(s.grad.Len())
}

// SumLocalTiedGrads, on a stage holding both the token embedding and the tied
// LM head (a single-stage model), sets both gradients to embedding + head. A
// pipeline whose first and last stages differ does the same sum, in the same
// order, with AddTiedGrads after exchanging the two buffers.
func (s *Stage) SumLocalTiedGrads() {
	for _, p := range s.params {
		if p.TiedTo == "" {
			continue
		}
		if e := s.byName[p.TiedTo]; e != nil {
			s.be.Add(e.Grad, e.Grad, p.Grad) // embedding + head, AddTiedGrads's order
			s.be.Copy(p.Grad, e.Grad)
		}
	}
}

// AddTiedGrads sets dst = embedding + head, elementwise, in that order, on
// host buffers.
func AddTiedGrads(dst, embedding, head []float32) {
	d, _ := tensor.From(dst, len(dst))
	e, _ := tensor.From(embedding, len(embedding))
	h, _ := tensor.From(head, len(head))
	hostBackend().Add(d, e, h)
}

// Discard drops a micro-batch's saved state without a backward pass (for
// evaluation: forward only, nothing accumulated).
func (s *Stage) Discard(mb int) {
	if st, ok := s.mbs[mb]; ok {
		s.setBytes(st, 0)
		st.al.release()
		delete(s.mbs, mb)
	}
}
