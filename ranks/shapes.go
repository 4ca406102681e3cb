package ranks

import (
	"context"
	"fmt"

	"github.com/pplaunch/pplaunch/ranks/stageloop"

	"github.com/pplaunch/pplaunch/collective"
)

// A communicator of device memory (NCCL) carries no header: a receive of
// the wrong size would take whatever arrives. So before the first step on
// such a communicator (and before every step under --check-transfers, on
// any), every rank states the dtype and shape of each kind of message it
// sends and receives, by peer, and collective.CheckShapes compares the
// statements over the host communicator; a difference refuses the run on
// every rank, naming both ranks and both shapes.

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
		add(stageloop.WireDType(rs.exec.Act), send, peer, kind, chunk, shape...)
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
				act(true, rs.world(rs.sched.Placement[s+1], 0), collective.Control, s+1, stageloop.IOShape(st, rs.cfg.MicroSize, false)...)
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
