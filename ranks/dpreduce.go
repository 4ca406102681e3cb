package ranks

import (
	"context"
	"fmt"
	"time"

	"github.com/pplaunch/pplaunch/ranks/stageloop"

	"github.com/pplaunch/pplaunch/collective"
	"github.com/pplaunch/pplaunch/models"
	"github.com/pplaunch/pplaunch/models/tensor"
)

// dpExchange sums one stage's gradient over the data-parallel replicas as a
// chunked reduce-scatter and all-gather. The gradient of n elements is cut
// into dp parts (collective.ChunkBounds); replica d owns part d. start sends
// every other replica its part of this replica's gradient and posts the
// receives of the others' pieces of part d; finish sums part d over the
// replicas in replica order with the accumulator's tree (models.TreeSum,
// element-wise, so the bits are those of summing whole gradients the same
// way, which is what one process accumulating all micro-batches computes),
// then sends the sum to every other replica and receives theirs in place.
// A rank so holds ceil(n/dp)·(dp-1) received elements, not (dp-1)·n.
//
// Under ZeRO stage 1 (value set) finish moves only the pieces zeroMoves
// lists instead of the all-gather, the optimizer updates part me, and
// gatherValues all-gathers the parameters (zero.go).
type dpExchange struct {
	xf    stageloop.Mover
	be    tensor.Backend
	peers []int // the rank in comm of this stage's pipeline rank in each replica
	me    int   // this replica
	grad  *tensor.Tensor
	recv  *tensor.Tensor // the others' pieces of part me, in replica order skipping me
	tag   collective.Tag
	tr    *stageloop.Move
	value *tensor.Tensor // ZeRO stage 1: the stage's flat parameters; nil: off
	moves []gradMove     // ZeRO stage 1: the pieces of summed gradient moved after the reduce-scatter
}

func newDPExchange(xf stageloop.Mover, be tensor.Backend, peers []int, me int, grad *tensor.Tensor) *dpExchange {
	lo, hi := collective.ChunkBounds(grad.Len(), len(peers), me)
	return &dpExchange{xf: xf, be: be, peers: peers, me: me, grad: grad, recv: be.Alloc((len(peers) - 1) * (hi - lo))}
}

// part is replica d's part of the gradient.
func (e *dpExchange) part(d int) *tensor.Tensor {
	lo, hi := collective.ChunkBounds(e.grad.Len(), len(e.peers), d)
	return e.grad.View(lo, hi-lo)
}

// slot is where replica d's piece of part me is received (d != me).
func (e *dpExchange) slot(d int) *tensor.Tensor {
	lo, hi := collective.ChunkBounds(e.grad.Len(), len(e.peers), e.me)
	n := hi - lo
	if d > e.me {
		d--
	}
	return e.recv.View(d*n, n)
}

// start begins the reduce-scatter of the gradient as it is now (on a device,
// after the compute queued so far); tag names the stage and step (its
// MicroBatch tells the two phases apart).
func (e *dpExchange) start(ctx context.Context, tag collective.Tag) {
	e.tag = tag
	e.tag.MicroBatch = 0
	var reqs []stageloop.Req
	for d, peer := range e.peers {
		if d != e.me {
			reqs = append(reqs, stageloop.SendReq(peer, e.tag, e.part(d)), stageloop.RecvReq(peer, e.tag, e.slot(d)))
		}
	}
	e.tr = e.xf.Start(ctx, reqs...)
}

// finish completes the exchange: every replica then holds the same sum.
func (e *dpExchange) finish(ctx context.Context, timeout time.Duration) error {
	if err := e.wait(ctx, timeout, "reduce-scatter"); err != nil {
		return err
	}
	if err := e.sumOwn(); err != nil {
		return err
	}
	if e.value != nil {
		return e.move(ctx, timeout)
	}
	e.tag.MicroBatch = 1
	var reqs []stageloop.Req
	for d, peer := range e.peers {
		if d != e.me {
			reqs = append(reqs, stageloop.SendReq(peer, e.tag, e.part(e.me)), stageloop.RecvReq(peer, e.tag, e.part(d)))
		}
	}
	e.tr = e.xf.Start(ctx, reqs...)
	return e.wait(ctx, timeout, "all-gather")
}

func (e *dpExchange) wait(ctx context.Context, timeout time.Duration, phase string) error {
	wctx, cancel := stageloop.WaitContext(ctx, timeout)
	defer cancel()
	if err := e.tr.Wait(wctx); err != nil {
		return fmt.Errorf("%s: %w", phase, err)
	}
	return nil
}

// sumOwn sums part me over the replicas in replica order. TreeSumTensors
// adds in place into parts[0]: this replica's own part on replica 0, replica
// 0's received piece elsewhere (copied back).
func (e *dpExchange) sumOwn() error {
	own := e.part(e.me)
	if own.Len() == 0 {
		return nil
	}
	parts := make([]*tensor.Tensor, len(e.peers))
	for d := range parts {
		if d == e.me {
			parts[d] = own
		} else {
			parts[d] = e.slot(d)
		}
	}
	sum, err := models.TreeSumTensors(e.be, parts)
	if err != nil {
		return err
	}
	if sum != own {
		e.be.Copy(own, sum)
	}
	return nil
}

// startReduce starts stage s's data-parallel exchange (of rs's stage) as
// soon as the stage's last backward is done.
func (sl *stepLoop) startReduce(s int, rs *rankStages) error {
	if sl.dp == nil {
		sl.dp = map[int]*dpExchange{}
	}
	e := sl.dp[s]
	if e == nil {
		peers := make([]int, sl.cfg.DP)
		for d := range peers {
			peers[d] = sl.world(sl.pRank, d)
		}
		st := rs.stages[s]
		e = newDPExchange(rs.exec.Mover(), sl.job.Compute, peers, sl.dRank, st.GradTensor())
		if sl.zeroOn() {
			e.value, e.moves = st.ValueTensor(), zeroMoves(sl.zeroParams(st), st.GradTensor().Len(), sl.cfg.DP)
		}
		sl.dp[s] = e
	}
	e.start(sl.ctx, collective.Tag{Kind: collective.Data, Chunk: uint16(s), Step: uint32(sl.curStep)})
	return nil
}

// finishReduce completes every stage's exchange, so dp replicas give the
// bits of one process accumulating all their micro-batches.
func (sl *stepLoop) finishReduce(ctx context.Context, step int) error {
	for _, s := range sl.order {
		e := sl.dp[s]
		if e == nil || e.tr == nil {
			return fmt.Errorf("step %d: stage %d never finished its backward", step, s)
		}
		err := e.finish(ctx, sl.cfg.Timeout)
		e.tr = nil
		if err != nil {
			return fmt.Errorf("step %d: data-parallel gradient exchange of stage %d: %w", step, s, err)
		}
	}
	return nil
}

// freeExchanges drops every stage's exchange (a recut rebuilds the stages
// and their gradients), freeing the receive buffers.
func (sl *stepLoop) freeExchanges() {
	for _, e := range sl.dp {
		sl.job.Compute.Free(e.recv)
	}
	sl.dp = nil
}
