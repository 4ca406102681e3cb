package ranks

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/pplaunch/pplaunch/ranks/stageloop"

	"github.com/pplaunch/pplaunch/collective"
	"github.com/pplaunch/pplaunch/models"
	"github.com/pplaunch/pplaunch/models/tensor"
	"github.com/pplaunch/pplaunch/plan"
)

// ZeRO stage 1 (TrainConfig.Zero): replica d of a stage keeps the optimizer
// state of, and updates, only part d of the stage's flat layout, the part
// of the summed gradient the reduce-scatter leaves with it
// (collective.ChunkBounds); the replicas then all-gather the parameters
// instead of the gradient. The numbers stay those of one process: the update
// is elementwise, and the two things that need a parameter's whole summed
// gradient get it, moved after the reduce-scatter (zeroMoves): the global
// norm's Σg² of a parameter (a sum in the backend's order over the whole
// tensor) is computed by the replica owning its first element, and the tied
// embedding and head, whose gradients the first and last stages add, are
// gathered whole on every replica.

// checkZero checks TrainConfig.Zero with the planner's rule.
func (c *TrainConfig) checkZero() error { return plan.CheckZero(c.Zero) }

// zeroParam is one parameter of a stage's flat layout, as zeroMoves sees it.
type zeroParam struct {
	off, n int
	tied   bool // the tied embedding or head: needed whole on every replica
}

// gradMove is one piece of summed gradient, elements [lo, hi) of the
// stage's flat layout, that replica from (its owner) sends to replica to.
type gradMove struct{ from, to, lo, hi int }

// owner is the replica whose part of a layout of n elements over dp
// replicas holds element i.
func owner(n, dp, i int) int {
	for d := range dp {
		if _, hi := collective.ChunkBounds(n, dp, d); i < hi {
			return d
		}
	}
	return dp - 1
}

// zeroMoves lists, in an order every replica agrees on, the pieces of
// summed gradient to move after the reduce-scatter of a layout of n
// elements over dp replicas: a parameter spanning several parts goes
// whole to the owner of its first element (which computes its Σg²), a
// tied one whole to every replica.
func zeroMoves(params []zeroParam, n, dp int) []gradMove {
	var out []gradMove
	for _, p := range params {
		if p.n == 0 {
			continue
		}
		first, last := owner(n, dp, p.off), owner(n, dp, p.off+p.n-1)
		if first == last && !p.tied {
			continue
		}
		for from := first; from <= last; from++ {
			lo, hi := collective.ChunkBounds(n, dp, from)
			lo, hi = max(lo, p.off), min(hi, p.off+p.n)
			if lo >= hi {
				continue
			}
			for to := range dp {
				if to != from && (p.tied || to == first) {
					out = append(out, gradMove{from: from, to: to, lo: lo, hi: hi})
				}
			}
		}
	}
	return out
}

// move sends and receives the pieces of summed gradient of e.moves (after
// the reduce-scatter): tags 2, 3, ... in the list's order, so that each
// pairs with its own on a communicator matching by order (NCCL) as well.
func (e *dpExchange) move(ctx context.Context, timeout time.Duration) error {
	var reqs []stageloop.Req
	for i, m := range e.moves {
		tag := e.tag
		tag.MicroBatch = uint32(2 + i)
		piece := e.grad.View(m.lo, m.hi-m.lo)
		switch e.me {
		case m.from:
			reqs = append(reqs, stageloop.SendReq(e.peers[m.to], tag, piece))
		case m.to:
			reqs = append(reqs, stageloop.RecvReq(e.peers[m.from], tag, piece))
		}
	}
	if len(reqs) == 0 {
		return nil
	}
	e.tr = e.xf.Start(ctx, reqs...)
	return e.wait(ctx, timeout, "gather of whole gradients")
}

// gatherValues all-gathers the stage's parameters after the optimizer
// updated part me (tag 1: the all-gather's).
func (e *dpExchange) gatherValues(ctx context.Context, timeout time.Duration, step int) error {
	tag := collective.Tag{Kind: collective.Data, Chunk: e.tag.Chunk, Step: uint32(step), MicroBatch: 1}
	part := func(d int) *tensor.Tensor {
		lo, hi := collective.ChunkBounds(e.value.Len(), len(e.peers), d)
		return e.value.View(lo, hi-lo)
	}
	var reqs []stageloop.Req
	for d, peer := range e.peers {
		if d != e.me {
			reqs = append(reqs, stageloop.SendReq(peer, tag, part(e.me)), stageloop.RecvReq(peer, tag, part(d)))
		}
	}
	e.tr = e.xf.Start(ctx, reqs...)
	err := e.wait(ctx, timeout, "all-gather of parameters")
	e.tr = nil
	return err
}

// zeroOn says whether the optimizer state is sharded: ZeRO stage 1 with
// more than one replica (one replica owns everything anyway).
func (j *rankJob) zeroOn() bool { return j.cfg.Zero == 1 && j.cfg.DP > 1 }

// zeroParams is stage st's layout for zeroMoves.
func (j *rankJob) zeroParams(st *models.Stage) []zeroParam {
	tied := map[string]bool{}
	for _, p := range j.cfg.Model.Params() {
		if p.TiedTo != "" {
			tied[p.Name], tied[p.TiedTo] = true, true
		}
	}
	var out []zeroParam
	for _, p := range st.Params() {
		out = append(out, zeroParam{off: p.Offset(), n: p.Numel(), tied: tied[p.Name]})
	}
	return out
}

// normOwner is the replica that gives parameter p's Σg² to the global
// norm: replica 0 (every replica holds every summed gradient), or under
// ZeRO stage 1 the owner of p's first element.
func (j *rankJob) normOwner(st *models.Stage, p *models.Param) int {
	if !j.zeroOn() {
		return 0
	}
	return owner(st.GradTensor().Len(), j.cfg.DP, p.Offset())
}

// shardOptimizer is stage st's optimizer: under ZeRO stage 1 the part of
// opt this replica owns.
func (j *rankJob) shardOptimizer(st *models.Stage, opt models.Optimizer) models.Optimizer {
	if !j.zeroOn() {
		return opt
	}
	lo, hi := collective.ChunkBounds(st.GradTensor().Len(), j.cfg.DP, j.dRank)
	return models.NewSharded(opt, st.Params(), lo, hi)
}

// gatherParams all-gathers every stage's parameters after a ZeRO stage 1
// update.
func (sl *stepLoop) gatherParams(ctx context.Context, step int) error {
	for _, s := range sl.order {
		e := sl.dp[s]
		if e == nil || e.value == nil {
			return fmt.Errorf("step %d: stage %d has no sharded exchange", step, s)
		}
		if err := e.gatherValues(ctx, sl.cfg.Timeout, step); err != nil {
			return fmt.Errorf("step %d: data-parallel parameter exchange of stage %d: %w", step, s, err)
		}
	}
	return nil
}

// chunkZeroState tags the optimizer state parts replica 0 gathers for a
// checkpoint (its MicroBatch: stage << 8 | slot).
const chunkZeroState = 0xFFF3

// optimizerState is stage s's whole optimizer state for a checkpoint, on
// replica 0 (ok): under ZeRO stage 1 put together from every replica's
// part, which the other replicas send here (and return !ok), so that a
// checkpoint holds no trace of the layout that wrote it.
func (rs *rankStages) optimizerState(ctx context.Context, step, s int) (st models.OptimizerState, ok bool, err error) {
	opt := rs.opts[s]
	if !rs.zeroOn() {
		return opt.State(), rs.dRank == 0, nil
	}
	stage, part := rs.stages[s], opt.State()
	n := stage.GradTensor().Len()
	lo, hi := collective.ChunkBounds(n, rs.cfg.DP, rs.dRank)
	flat, err := stage.FlatState(part, lo, hi)
	if err != nil {
		return st, false, err
	}
	slots := make([]string, 0, len(flat))
	for name := range flat {
		slots = append(slots, name)
	}
	slices.Sort(slots)
	var ops []collective.Op
	for k, name := range slots {
		tag := collective.Tag{Kind: collective.Control, Chunk: chunkZeroState, Step: uint32(step), MicroBatch: uint32(s<<8 | k)}
		if rs.dRank != 0 {
			ops = append(ops, collective.SendOp(rs.world(rs.pRank, 0), tag, collective.F32(flat[name])))
			continue
		}
		whole := make([]float32, n)
		copy(whole[lo:], flat[name])
		for d := 1; d < rs.cfg.DP; d++ {
			dlo, dhi := collective.ChunkBounds(n, rs.cfg.DP, d)
			ops = append(ops, collective.RecvOp(rs.world(rs.pRank, d), tag, collective.F32(whole[dlo:dhi])))
		}
		flat[name] = whole
	}
	wctx, cancel := rs.waitCtx(ctx)
	defer cancel()
	if err := rs.job.Comm.Batch(ops...).Wait(wctx); err != nil {
		return st, false, fmt.Errorf("gather of stage %d's optimizer state on replica 0: %w", s, err)
	}
	if rs.dRank != 0 {
		return st, false, nil
	}
	st, err = stage.StateFromFlat(part.Kind, part.Steps, flat)
	return st, err == nil, err
}
