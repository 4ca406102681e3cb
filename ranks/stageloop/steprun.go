package stageloop

import (
	"context"
	"fmt"
	"time"

	"github.com/pplaunch/pplaunch/collective"
	"github.com/pplaunch/pplaunch/models"
	"github.com/pplaunch/pplaunch/models/tensor"
	"github.com/pplaunch/pplaunch/schedules"
)

type key struct{ stage, mb int }

// pending is a posted receive or send.
type pending struct {
	tr    *Move
	t     *tensor.Tensor
	span  int // index of the action's span
	peer  int
	act   schedules.Action
	ended bool
}

// stepRun is one step of one rank's list in progress: what is in flight and
// what each micro-batch holds between its actions.
type stepRun struct {
	x       *Executor
	ctx     context.Context
	step    int
	batches Batches
	res     *StepResult
	start   time.Time
	cur     int // the action running, by its index in the list

	recvF   map[key]*pending       // posted activation receives
	recvB   map[key]*pending       // posted gradient receives
	sends   []*pending             // sends not yet seen done
	acts    map[key]*tensor.Tensor // stage outputs to send or hand on locally
	grads   map[key]*tensor.Tensor // input gradients to send or hand on locally
	inputs  map[key]*tensor.Tensor // received inputs held by the stage until backward
	locals  map[key]*tensor.Tensor // inputs handed on by a stage of this rank, likewise
	gradOut map[key]*tensor.Tensor // output gradients held until the weight pass
	data    map[int][2][]int32     // global micro -> tokens, targets
	live    int64                  // peak activation bytes of the rank's stages together
}

func newStepRun(x *Executor, ctx context.Context, step int, batches Batches) *stepRun {
	n := len(x.Sched.Ranks[x.PRank])
	r := &stepRun{
		x: x, ctx: ctx, step: step, batches: batches, start: time.Now(),
		res:   &StepResult{Losses: map[int]float64{}, Spans: make([]schedules.Span, n), PerMB: map[int]int64{}},
		recvF: map[key]*pending{}, recvB: map[key]*pending{},
		acts: map[key]*tensor.Tensor{}, grads: map[key]*tensor.Tensor{},
		inputs: map[key]*tensor.Tensor{}, locals: map[key]*tensor.Tensor{}, gradOut: map[key]*tensor.Tensor{},
		data: map[int][2][]int32{},
	}
	r.res.Start = r.start
	return r
}

func (r *stepRun) since() float64 { return time.Since(r.start).Seconds() }

func (r *stepRun) fail(a schedules.Action, peer int, err error) error {
	return &ActionError{Rank: r.x.Comm.Rank(), Step: r.step, Action: a, Peer: peer, Micro: r.x.First + a.Micro, Err: err}
}

// run executes action i of the list. A transfer's span stays open until its
// handle is seen done; a compute's closes when it returns.
func (r *stepRun) run(i int, a schedules.Action) error {
	r.reap()
	if r.x.Stall != nil {
		r.x.Stall(r.step, a)
	}
	if err := r.ctx.Err(); err != nil {
		return r.fail(a, -1, err)
	}
	t0 := r.since()
	r.cur, r.res.Spans[i] = i, schedules.Span{Action: a, Start: t0, End: t0}
	st := r.x.Stages[a.Stage]
	if st == nil && a.Kind != schedules.SendF && a.Kind != schedules.SendB {
		return r.fail(a, -1, fmt.Errorf("stage %d is not on pipeline rank %d", a.Stage, r.x.PRank))
	}
	var err error
	switch a.Kind {
	case schedules.RecvF, schedules.RecvB:
		return r.recv(i, a, st)
	case schedules.SendF, schedules.SendB:
		return r.send(i, a)
	case schedules.F:
		err = r.forward(a, st)
	case schedules.B, schedules.I:
		err = r.backward(a, st)
	case schedules.W:
		err = r.weight(a, st)
	default:
		err = r.fail(a, -1, fmt.Errorf("unknown action kind %d", a.Kind))
	}
	if err != nil {
		return err
	}
	r.res.Spans[i].End = r.since()
	r.measure()
	return r.afterCompute(i, a, st)
}

// measure records the activation bytes the rank's stages hold now.
func (r *stepRun) measure() {
	var cur int64
	for _, s := range r.x.order {
		cur += r.x.Stages[s].ActivationBytes()
	}
	r.live = max(r.live, cur)
}

// afterCompute finishes a stage's step right after its last backward and
// hands it to OnLastBackward.
func (r *stepRun) afterCompute(i int, a schedules.Action, st Stage) error {
	if r.x.lastBack[a.Stage] != i || (a.Kind != schedules.B && a.Kind != schedules.W) {
		return nil
	}
	if err := st.FinishStep(); err != nil {
		return r.fail(a, -1, err)
	}
	if r.x.OnLastBackward != nil {
		if err := r.x.OnLastBackward(a.Stage); err != nil {
			return r.fail(a, -1, err)
		}
	}
	return nil
}

// tag is the wire tag of transfer a: the kind of data, the stage that
// consumes it, the step and the global micro-batch.
func (r *stepRun) tag(a schedules.Action) collective.Tag {
	t := collective.Tag{Step: uint32(r.step), MicroBatch: uint32(r.x.First + a.Micro)}
	t.Kind, t.Chunk, _ = messageKind(a)
	return t
}

// recv posts a receive into a pooled buffer of the stage's own shape (its
// input for RECV_F, the gradient of its output for RECV_B); the compute that
// needs it waits for it.
func (r *stepRun) recv(i int, a schedules.Action, st Stage) error {
	peer := r.x.Peer(r.x.Sched.Peer(a))
	buf := r.x.pool.get(IOShape(st, r.x.MicroSize, a.Kind == schedules.RecvF))
	tr := r.x.xf.Start(r.ctx, RecvReq(peer, r.tag(a), buf))
	p := &pending{tr: tr, t: buf, span: i, peer: peer, act: a}
	k := key{a.Stage, a.Micro}
	if a.Kind == schedules.RecvF {
		r.recvF[k] = p
	} else {
		r.recvB[k] = p
	}
	return nil
}

// send starts sending what the stage computed; compute goes on meanwhile.
func (r *stepRun) send(i int, a schedules.Action) error {
	peer := r.x.Peer(r.x.Sched.Peer(a))
	k := key{a.Stage, a.Micro}
	from := r.acts
	if a.Kind == schedules.SendB {
		from = r.grads
	}
	t := from[k]
	if t == nil {
		return r.fail(a, peer, fmt.Errorf("nothing to send: the schedule sends before it computes"))
	}
	delete(from, k)
	tr := r.x.xf.Start(r.ctx, SendReq(peer, r.tag(a), t))
	r.sends = append(r.sends, &pending{tr: tr, t: t, span: i, peer: peer, act: a})
	return nil
}

// reap ends the spans of the sends seen done since the last action and
// returns their tensors to the pool; staged receives that have arrived start
// their copy to the device.
func (r *stepRun) reap() {
	n := 0
	for _, p := range r.sends {
		if p.tr.ready() {
			r.sendDone(p)
		} else {
			r.sends[n] = p
			n++
		}
	}
	clear(r.sends[n:])
	r.sends = r.sends[:n]
	if r.x.xf.stg != nil {
		for _, m := range []map[key]*pending{r.recvF, r.recvB} {
			for _, p := range m {
				p.tr.land()
			}
		}
	}
}

func (r *stepRun) sendDone(p *pending) {
	r.res.Spans[p.span].End = r.since()
	r.x.pool.put(p.t)
}

// wait waits for a posted transfer, with the executor's timeout.
func (r *stepRun) wait(p *pending) error {
	ctx, cancel := WaitContext(r.ctx, r.x.Timeout)
	defer cancel()
	err := p.tr.Wait(ctx)
	if !p.ended {
		r.res.Spans[p.span].End = r.since()
		p.ended = true
	}
	if err != nil {
		return r.fail(p.act, p.peer, err)
	}
	return nil
}

// take returns the tensor a compute needs from a neighbouring stage: the
// posted receive in posted (waited for now), or the output of that stage
// on this rank in local.
func (r *stepRun) take(k, from key, posted map[key]*pending, local map[key]*tensor.Tensor) (t *tensor.Tensor, received bool, err error) {
	if p := posted[k]; p != nil {
		if err := r.wait(p); err != nil {
			return nil, false, err
		}
		// The compute starts once its input is there: the wait before is
		// idle (or transfer) time, not compute.
		r.res.Spans[r.cur].Start = r.since()
		delete(posted, k)
		return p.t, true, nil
	}
	if t := local[from]; t != nil {
		delete(local, from)
		return t, false, nil
	}
	return nil, false, nil
}

// batch returns global micro-batch g's tokens and targets, read once.
func (r *stepRun) batch(g int) ([2][]int32, error) {
	if d, ok := r.data[g]; ok {
		return d, nil
	}
	tok, tgt, err := r.batches(g)
	if err != nil {
		return [2][]int32{}, err
	}
	r.data[g] = [2][]int32{tok, tgt}
	return r.data[g], nil
}

func (r *stepRun) forward(a schedules.Action, st Stage) error {
	k, g := key{a.Stage, a.Micro}, r.x.First+a.Micro
	in := models.Input{}
	if st.IsFirst() || st.IsLast() {
		d, err := r.batch(g)
		if err != nil {
			return r.fail(a, -1, err)
		}
		if st.IsFirst() {
			in.Tokens = d[0]
		}
		if st.IsLast() {
			in.Targets = d[1]
		}
	}
	if !st.IsFirst() {
		t, received, err := r.take(k, key{a.Stage - 1, a.Micro}, r.recvF, r.acts)
		switch {
		case err != nil:
			return err
		case t == nil:
			return r.fail(a, -1, fmt.Errorf("input of stage %d not received", a.Stage))
		case received:
			r.inputs[k] = t
		default:
			r.locals[k] = t
		}
		in.Act = t
	}
	before := st.ActivationBytes()
	out, err := st.Forward(g, in)
	if err != nil {
		return r.fail(a, -1, err)
	}
	r.res.PerMB[a.Stage] = max(r.res.PerMB[a.Stage], st.ActivationBytes()-before)
	if st.IsLast() {
		r.res.Losses[g] = out.Loss
	} else {
		r.acts[k] = out.Act
	}
	return nil
}

// backward runs B or I: the input gradient from the output gradient, and
// for B the weight gradient too.
func (r *stepRun) backward(a schedules.Action, st Stage) error {
	k, g := key{a.Stage, a.Micro}, r.x.First+a.Micro
	var gOut *tensor.Tensor
	if !st.IsLast() {
		t, _, err := r.take(k, key{a.Stage + 1, a.Micro}, r.recvB, r.grads)
		if err != nil {
			return err
		}
		if t == nil {
			return r.fail(a, -1, fmt.Errorf("output gradient of stage %d not received", a.Stage))
		}
		gOut = t
		r.gradOut[k] = t
	}
	backward := st.BackwardInput
	if a.Kind == schedules.B {
		backward = st.Backward
	}
	d, err := backward(g, gOut)
	if err != nil {
		return r.fail(a, -1, err)
	}
	if d != nil {
		r.grads[k] = d
	}
	if a.Kind == schedules.B {
		r.release(k)
	}
	return nil
}

func (r *stepRun) weight(a schedules.Action, st Stage) error {
	if err := st.BackwardWeight(r.x.First + a.Micro); err != nil {
		return r.fail(a, -1, err)
	}
	r.release(key{a.Stage, a.Micro})
	return nil
}

// release returns the received buffers a finished micro-batch held to the
// pool, and gives back those a stage of this rank handed on.
func (r *stepRun) release(k key) {
	if t := r.inputs[k]; t != nil {
		r.x.pool.put(t)
		delete(r.inputs, k)
	}
	if t := r.locals[k]; t != nil {
		r.x.pool.drop(t)
		delete(r.locals, k)
	}
	if t := r.gradOut[k]; t != nil {
		if r.x.Stages[k.stage+1] == nil { // received, not a local stage's buffer
			r.x.pool.put(t)
		} else {
			r.x.pool.drop(t)
		}
		delete(r.gradOut, k)
	}
}

// end waits for the sends still in flight and refuses receives that no
// compute took.
func (r *stepRun) end() error {
	for _, p := range r.sends {
		if err := r.wait(p); err != nil {
			return err
		}
		r.x.pool.put(p.t)
	}
	r.sends = nil
	if p := firstPosted(r.recvF, r.recvB); p != nil {
		what := "input"
		if p.act.Kind == schedules.RecvB {
			what = "gradient"
		}
		return r.fail(p.act, p.peer, fmt.Errorf("received %s of stage %d mb %d was never used", what, p.act.Stage, p.act.Micro))
	}
	if len(r.x.Stages) == 1 {
		// One stage: its own peak also counts what a forward holds while it runs.
		for _, st := range r.x.Stages {
			r.live = max(r.live, st.PeakActivationBytes())
		}
	}
	r.res.Peak = r.live
	return nil
}

// firstPosted is the earliest in the list of the receives still posted.
func firstPosted(posted ...map[key]*pending) *pending {
	var first *pending
	for _, m := range posted {
		for _, p := range m {
			if first == nil || p.span < first.span {
				first = p
			}
		}
	}
	return first
}
