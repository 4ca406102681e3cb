package ranks

import (
	"context"
	"fmt"
	"time"

	"github.com/pplaunch/pplaunch/collective"
	"github.com/pplaunch/pplaunch/models"
	"github.com/pplaunch/pplaunch/models/tensor"
	"github.com/pplaunch/pplaunch/schedules"
)

// Stage is what the executor drives: *models.Stage, or a stand-in with
// a known cost per action (the runtime-overhead benchmark).
type Stage interface {
	IsFirst() bool
	IsLast() bool
	ActShape(batch int) []int
	BeginStep(first, count int) error
	Forward(mb int, in models.Input) (models.Output, error)
	Backward(mb int, gradOut *tensor.Tensor) (*tensor.Tensor, error)
	BackwardInput(mb int, gradOut *tensor.Tensor) (*tensor.Tensor, error)
	BackwardWeight(mb int) error
	FinishStep() error
	ActivationBytes() int64
	PeakActivationBytes() int64
	ResetPeak()
}

// Batches gives the executor a micro-batch's tokens and targets by global
// micro-batch index (the first stage reads tokens, the last targets).
type Batches func(globalMicro int) (tokens, targets []int32, err error)

// Executor runs one pipeline rank's action list, step after step, with the
// real stages and communicator. It is the stage loop of DESIGN.md: receives
// are posted when the list reaches them (Lower places them ahead of the
// compute that needs them) into buffers reused from step to step, and waited
// for only by that compute; sends go out without blocking compute; gradients
// accumulate over the step's micro-batches in global micro-batch order
// (models.Accumulator). Transfers are issued in list order, which is the
// order the peer issues the matching ones, as backends that pair transfers by
// order (NCCL) require; a validated schedule therefore cannot deadlock here.
type Executor struct {
	Sched  *schedules.Schedule
	PRank  int           // this rank's pipeline rank (its list in Sched)
	Stages map[int]Stage // the virtual stages this rank holds, by stage index
	Comm   collective.Comm
	// Peer maps a pipeline rank to its rank in Comm (the same data-parallel replica).
	Peer func(pipelineRank int) int
	// First is the global index of this replica's micro-batch 0 (replica·M).
	First     int
	MicroSize int // sequences per micro-batch
	Timeout   time.Duration
	// OnLastBackward, if set, is called with a stage index right after that
	// stage's last backward of the step has run and FinishStep has summed its
	// gradients, so its data-parallel reduction can start while the rest of
	// the schedule runs.
	OnLastBackward func(stage int) error
	// Stall, when set, is called before each action; the test-only stall hook
	// uses it to hang a chosen rank at a chosen action.
	Stall func(step int, a schedules.Action)

	pool     map[string][]*tensor.Tensor
	lastBack map[int]int // stage -> index in the list of its last B or W
}

// StepResult is what one rank measured in one step.
type StepResult struct {
	Losses map[int]float64  // global micro-batch -> loss (last stage only)
	Spans  []schedules.Span // one per action, seconds since Start
	Start  time.Time        // when the step's first action began
	Peak   int64            // peak activation bytes held by the rank's stages together
	PerMB  map[int]int64    // stage -> activation bytes one micro-batch left after its forward
}

// ActionError is a failed or timed-out action, naming what the rank was doing.
// Its text leaves out the rank itself, which the launcher's rank prefix gives.
type ActionError struct {
	Rank   int // this rank in Comm
	Step   int
	Action schedules.Action
	Peer   int // rank in Comm on the other end, -1 for compute
	Micro  int // global micro-batch
	Err    error
}

func (e *ActionError) Error() string {
	if e.Peer >= 0 {
		return fmt.Sprintf("step %d: %s (global mb=%d) with rank %d: %v", e.Step, e.Action, e.Micro, e.Peer, e.Err)
	}
	return fmt.Sprintf("step %d: %s (global mb=%d): %v", e.Step, e.Action, e.Micro, e.Err)
}

func (e *ActionError) Unwrap() error { return e.Err }

type key struct{ stage, mb int }

// pending is a posted receive or send.
type pending struct {
	h     *collective.Handle
	t     *tensor.Tensor
	span  int // index of the action's span
	peer  int
	act   schedules.Action
	ended bool
}

func (x *Executor) init() {
	if x.pool != nil {
		return
	}
	x.pool = map[string][]*tensor.Tensor{}
	x.lastBack = map[int]int{}
	for i, a := range x.Sched.Ranks[x.PRank] {
		if a.Kind == schedules.B || a.Kind == schedules.W {
			x.lastBack[a.Stage] = i
		}
	}
}

func shapeKey(shape []int) string { return fmt.Sprint(shape) }

func (x *Executor) get(shape []int) *tensor.Tensor {
	k := shapeKey(shape)
	if l := x.pool[k]; len(l) > 0 {
		t := l[len(l)-1]
		x.pool[k] = l[:len(l)-1]
		return t
	}
	return tensor.New(shape...)
}

func (x *Executor) put(t *tensor.Tensor) {
	if t != nil {
		k := shapeKey(t.Shape)
		x.pool[k] = append(x.pool[k], t)
	}
}

func (x *Executor) ctx(parent context.Context) (context.Context, context.CancelFunc) {
	if x.Timeout > 0 {
		return context.WithTimeout(parent, x.Timeout)
	}
	return context.WithCancel(parent)
}

// Step runs the rank's action list once for training step step. After an
// error the Executor must not be used again: transfers may still be pending
// on its buffers until the caller aborts the communicator.
func (x *Executor) Step(parent context.Context, step int, batches Batches) (*StepResult, error) {
	x.init()
	s := x.Sched
	m := s.M
	list := s.Ranks[x.PRank]
	res := &StepResult{Losses: map[int]float64{}, Spans: make([]schedules.Span, len(list)), PerMB: map[int]int64{}}
	for s, st := range x.Stages {
		if err := st.BeginStep(x.First, m); err != nil {
			return nil, fmt.Errorf("step %d: stage %d: %w", step, s, err)
		}
		st.ResetPeak()
	}
	me := x.Comm.Rank()
	fail := func(a schedules.Action, peer int, err error) error {
		return &ActionError{Rank: me, Step: step, Action: a, Peer: peer, Micro: x.First + a.Micro, Err: err}
	}
	actShape := []int{x.MicroSize, 0, 0}
	for _, st := range x.Stages {
		actShape = st.ActShape(x.MicroSize)
		break
	}
	var (
		recvs   = map[key]*pending{}       // posted receives, by (stage, micro) and kind
		gradIn  = map[key]*pending{}       // posted gradient receives
		sends   []*pending                 // sends in flight
		acts    = map[key]*tensor.Tensor{} // stage outputs to send or hand on locally
		grads   = map[key]*tensor.Tensor{} // input gradients to send or hand on locally
		inputs  = map[key]*tensor.Tensor{} // received inputs held by the stage until backward
		gradOut = map[key]*tensor.Tensor{} // output gradients held until the weight pass
		data    = map[int][2][]int32{}     // global micro -> tokens, targets
		start   = time.Now()
		since   = func() float64 { return time.Since(start).Seconds() }
	)
	res.Start = start
	batch := func(g int) ([2][]int32, error) {
		if d, ok := data[g]; ok {
			return d, nil
		}
		tok, tgt, err := batches(g)
		if err != nil {
			return [2][]int32{}, err
		}
		data[g] = [2][]int32{tok, tgt}
		return data[g], nil
	}
	wait := func(parent context.Context, p *pending) error {
		ctx, cancel := x.ctx(parent)
		defer cancel()
		err := p.h.Wait(ctx)
		if !p.ended {
			res.Spans[p.span].End = since()
			p.ended = true
		}
		if err != nil {
			return fail(p.act, p.peer, err)
		}
		return nil
	}
	// A send's span ends when it is seen done, checked between actions.
	reap := func() {
		for _, p := range sends {
			if !p.ended {
				select {
				case <-p.h.Done():
					res.Spans[p.span].End = since()
					p.ended = true
				default:
				}
			}
		}
	}
	var live int64
	for i, a := range list {
		reap()
		if x.Stall != nil {
			x.Stall(step, a)
		}
		if err := parent.Err(); err != nil {
			return nil, fail(a, -1, err)
		}
		k := key{a.Stage, a.Micro}
		g := x.First + a.Micro
		t0 := since()
		res.Spans[i] = schedules.Span{Action: a, Start: t0, End: t0}
		st := x.Stages[a.Stage]
		if a.Kind.IsCompute() && st == nil {
			return nil, fail(a, -1, fmt.Errorf("stage %d is not on pipeline rank %d", a.Stage, x.PRank))
		}
		var err error
		switch a.Kind {
		case schedules.RecvF, schedules.RecvB:
			peer := x.Peer(s.Peer(a))
			buf := x.get(actShape)
			kind := collective.Activation
			if a.Kind == schedules.RecvB {
				kind = collective.Gradient
			}
			tag := collective.Tag{Kind: kind, Chunk: uint16(a.Stage), Step: uint32(step), MicroBatch: uint32(g)}
			p := &pending{h: x.Comm.Irecv(peer, tag, collective.F32(buf.Data, buf.Shape...)), t: buf, span: i, peer: peer, act: a}
			if a.Kind == schedules.RecvF {
				recvs[k] = p
			} else {
				gradIn[k] = p
			}
			continue // the span ends when the data is waited for
		case schedules.SendF, schedules.SendB:
			peer := x.Peer(s.Peer(a))
			var t *tensor.Tensor
			tag := collective.Tag{Step: uint32(step), MicroBatch: uint32(g)}
			if a.Kind == schedules.SendF {
				t, tag.Kind, tag.Chunk = acts[k], collective.Activation, uint16(a.Stage+1)
				delete(acts, k)
			} else {
				t, tag.Kind, tag.Chunk = grads[k], collective.Gradient, uint16(a.Stage-1)
				delete(grads, k)
			}
			if t == nil {
				return nil, fail(a, peer, fmt.Errorf("nothing to send: the schedule sends before it computes"))
			}
			p := &pending{h: x.Comm.Isend(peer, tag, collective.F32(t.Data, t.Shape...)), t: t, span: i, peer: peer, act: a}
			sends = append(sends, p)
			continue
		case schedules.F:
			in := models.Input{}
			if st.IsFirst() || st.IsLast() {
				d, e := batch(g)
				if e != nil {
					return nil, fail(a, -1, e)
				}
				if st.IsFirst() {
					in.Tokens = d[0]
				}
				if st.IsLast() {
					in.Targets = d[1]
				}
			}
			if !st.IsFirst() {
				if p := recvs[k]; p != nil {
					if err := wait(parent, p); err != nil {
						return nil, err
					}
					delete(recvs, k)
					in.Act = p.t
					inputs[k] = p.t
				} else if t := acts[key{a.Stage - 1, a.Micro}]; t != nil {
					delete(acts, key{a.Stage - 1, a.Micro})
					in.Act = t // from the previous stage on this rank
				} else {
					return nil, fail(a, -1, fmt.Errorf("input of stage %d not received", a.Stage))
				}
			}
			before := st.ActivationBytes()
			var out models.Output
			out, err = st.Forward(g, in)
			if err == nil {
				res.PerMB[a.Stage] = max(res.PerMB[a.Stage], st.ActivationBytes()-before)
				if st.IsLast() {
					res.Losses[g] = out.Loss
				} else {
					acts[k] = out.Act
				}
			}
		case schedules.B, schedules.I:
			var gOut *tensor.Tensor
			if !st.IsLast() {
				if p := gradIn[k]; p != nil {
					if err := wait(parent, p); err != nil {
						return nil, err
					}
					delete(gradIn, k)
					gOut = p.t
				} else if t := grads[key{a.Stage + 1, a.Micro}]; t != nil {
					delete(grads, key{a.Stage + 1, a.Micro})
					gOut = t
				} else {
					return nil, fail(a, -1, fmt.Errorf("output gradient of stage %d not received", a.Stage))
				}
				gradOut[k] = gOut
			}
			var d *tensor.Tensor
			if a.Kind == schedules.B {
				d, err = st.Backward(g, gOut)
			} else {
				d, err = st.BackwardInput(g, gOut)
			}
			if err == nil && d != nil {
				grads[k] = d
			}
			if err == nil && a.Kind == schedules.B {
				x.release(inputs, gradOut, k)
			}
		case schedules.W:
			err = st.BackwardWeight(g)
			if err == nil {
				x.release(inputs, gradOut, k)
			}
		default:
			err = fmt.Errorf("unknown action kind %d", a.Kind)
		}
		if err != nil {
			return nil, fail(a, -1, err)
		}
		res.Spans[i].End = since()
		var cur int64
		for _, st := range x.Stages {
			cur += st.ActivationBytes()
		}
		live = max(live, cur)
		if x.lastBack[a.Stage] == i && (a.Kind == schedules.B || a.Kind == schedules.W) {
			if err := st.FinishStep(); err != nil {
				return nil, fail(a, -1, err)
			}
			if x.OnLastBackward != nil {
				if err := x.OnLastBackward(a.Stage); err != nil {
					return nil, fail(a, -1, err)
				}
			}
		}
	}
	for _, p := range sends {
		if err := wait(parent, p); err != nil {
			return nil, err
		}
	}
	sends = nil
	if len(recvs)+len(gradIn) > 0 {
		for k, p := range recvs {
			return nil, fail(p.act, p.peer, fmt.Errorf("received input of stage %d mb %d was never used", k.stage, k.mb))
		}
		for k, p := range gradIn {
			return nil, fail(p.act, p.peer, fmt.Errorf("received gradient of stage %d mb %d was never used", k.stage, k.mb))
		}
	}
	if len(x.Stages) == 1 {
		// One stage: its own peak also counts what a forward holds while it runs.
		for _, st := range x.Stages {
			live = max(live, st.PeakActivationBytes())
		}
	}
	res.Peak = live
	return res, nil
}

// release returns the received buffers a finished micro-batch held.
func (x *Executor) release(inputs, gradOut map[key]*tensor.Tensor, k key) {
	if t := inputs[k]; t != nil {
		x.put(t)
		delete(inputs, k)
	}
	if t := gradOut[k]; t != nil {
		if x.Stages[k.stage+1] == nil { // received, not a local stage's buffer
			x.put(t)
		}
		delete(gradOut, k)
	}
}
