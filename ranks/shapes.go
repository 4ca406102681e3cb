package ranks

import (
	"context"
	"fmt"

	"github.com/pplaunch/pplaunch/collective"
	"github.com/pplaunch/pplaunch/schedules"
)

// A communicator of device memory (NCCL) carries no header: a receive of
// the wrong size would take whatever arrives. So before the first step on
// such a communicator (and before every step under --check-transfers, on
// any), every rank states the dtype and shape of each kind of message it
// sends and receives, by peer, and collective.CheckShapes compares the
// statements over the host communicator; a difference refuses the run on
// every rank, naming both ranks and both shapes.

// MessageKinds is every kind of message x's list sends or receives in a step
// (peers as ranks of Comm): each receive in the shape of its buffer, each
// send in the shape of what its stage makes.
func (x *Executor) MessageKinds() []collective.Transfer {
	me := x.Comm.Rank()
	var ts []collective.Transfer
	for _, a := range x.Sched.Ranks[x.PRank] {
		kind, chunk, ok := messageKind(a)
		st := x.Stages[a.Stage]
		if !ok || st == nil {
			continue
		}
		peer := x.Peer(x.Sched.Peer(a))
		if peer == me {
			continue
		}
		// RECV_F and SEND_B move the stage's input (or its gradient),
		// RECV_B and SEND_F its output.
		in := a.Kind == schedules.RecvF || a.Kind == schedules.SendB
		send := a.Kind == schedules.SendF || a.Kind == schedules.SendB
		ts = append(ts, collective.Transfer{Send: send, Peer: peer, Kind: kind, Chunk: chunk,
			DType: wireDType(x.Act), Shape: ioShape(st, x.MicroSize, in)})
	}
	return ts
}

// transfers is the executor's MessageKinds and the rank's other device
// messages: the tied embedding exchange, the data-parallel reduce-scatter
// and validation's activations.
func (rs *rankStages) transfers() []collective.Transfer {
	ts := rs.exec.MessageKinds()
	add := func(dt collective.DType, send bool, peer int, kind collective.Kind, chunk int, shape ...int) {
		ts = append(ts, collective.Transfer{Send: send, Peer: peer, Kind: kind, Chunk: uint16(chunk), DType: dt, Shape: shape})
	}
	f32 := func(send bool, peer int, kind collective.Kind, chunk int, shape ...int) {
		add(collective.Float32, send, peer, kind, chunk, shape...)
	}
	act := func(send bool, peer int, kind collective.Kind, chunk int, shape ...int) {
		add(wireDType(rs.exec.Act), send, peer, kind, chunk, shape...)
	}
	if rs.cfg.Model.Tied {
		first, last, emb, head := rs.tiedParams()
		if first != last && (emb == nil) != (head == nil) {
			peer, mine := rs.tiedPeer(emb, head)
			f32(true, peer, collective.Control, chunkTied, mine.Grad.Shape...)
			f32(false, peer, collective.Control, chunkTied, mine.Grad.Shape...)
		}
	}
	if rs.cfg.DP > 1 {
		// The all-gather's sizes follow from the same gradient length and
		// replica count as the reduce-scatter's, stated here.
		for _, s := range rs.order {
			n := rs.stages[s].GradTensor().Len()
			lo, hi := collective.ChunkBounds(n, rs.cfg.DP, rs.dRank)
			for d := range rs.cfg.DP {
				if d != rs.dRank {
					dlo, dhi := collective.ChunkBounds(n, rs.cfg.DP, d)
					f32(true, rs.world(rs.pRank, d), collective.Data, s, dhi-dlo)
					f32(false, rs.world(rs.pRank, d), collective.Data, s, hi-lo)
				}
			}
		}
	}
	if rs.dRank == 0 && rs.cfg.EvalBatches > 0 {
		for _, s := range rs.order {
			st := rs.stages[s]
			if s > 0 && rs.sched.Placement[s-1] != rs.pRank {
				act(false, rs.world(rs.sched.Placement[s-1], 0), collective.Control, s, st.ActShape(rs.cfg.MicroSize)...)
			}
			if s < rs.sched.Stages()-1 && rs.sched.Placement[s+1] != rs.pRank {
				act(true, rs.world(rs.sched.Placement[s+1], 0), collective.Control, s+1, ioShape(st, rs.cfg.MicroSize, false)...)
			}
		}
	}
	return ts
}

// checkShapes compares every rank's transfers (transfers) over the host
// communicator, before step step.
func (rs *rankStages) checkShapes(ctx context.Context, step int) error {
	wctx, cancel := rs.waitCtx(ctx)
	defer cancel()
	if err := collective.CheckShapes(wctx, rs.job.Comm, step, rs.transfers()); err != nil {
		return fmt.Errorf("step %d: transfer shapes: %w", step, err)
	}
	return nil
}

// shapesDue says whether the ranks check their transfer shapes before step:
// before the first step of a run on a communicator of device memory, and
// before every step under --check-transfers.
func shapesDue(checkEvery, device bool, step, first int) bool {
	return checkEvery || (device && step == first)
}
