package ranks

import (
	"context"
	"fmt"
	"time"

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
type dpExchange struct {
	comm  collective.Comm
	be    tensor.Backend
	peers []int // the rank in comm of this stage's pipeline rank in each replica
	me    int   // this replica
	grad  []float32
	recv  []float32 // the others' pieces of part me, in replica order skipping me
	tag   collective.Tag
	h     *collective.Handle
}

func newDPExchange(comm collective.Comm, be tensor.Backend, peers []int, me int, grad []float32) *dpExchange {
	lo, hi := collective.ChunkBounds(len(grad), len(peers), me)
	return &dpExchange{comm: comm, be: be, peers: peers, me: me, grad: grad, recv: make([]float32, (len(peers)-1)*(hi-lo))}
}

// part is replica d's part of the gradient.
func (e *dpExchange) part(d int) []float32 {
	lo, hi := collective.ChunkBounds(len(e.grad), len(e.peers), d)
	return e.grad[lo:hi]
}

// slot is where replica d's piece of part me is received (d != me).
func (e *dpExchange) slot(d int) []float32 {
	n := len(e.part(e.me))
	if d > e.me {
		d--
	}
	return e.recv[d*n : (d+1)*n]
}

// start begins the reduce-scatter of the gradient as it is now; tag names
// the stage and step (its MicroBatch tells the two phases apart).
func (e *dpExchange) start(tag collective.Tag) {
	e.tag = tag
	e.tag.MicroBatch = 0
	var ops []collective.Op
	for d, peer := range e.peers {
		if d != e.me {
			ops = append(ops, collective.SendOp(peer, e.tag, collective.F32(e.part(d))), collective.RecvOp(peer, e.tag, collective.F32(e.slot(d))))
		}
	}
	e.h = e.comm.Batch(ops...)
}

// finish completes the exchange: every replica then holds the same sum.
func (e *dpExchange) finish(ctx context.Context, timeout time.Duration) error {
	if err := e.wait(ctx, timeout, "reduce-scatter"); err != nil {
		return err
	}
	if err := e.sumOwn(); err != nil {
		return err
	}
	e.tag.MicroBatch = 1
	var ops []collective.Op
	for d, peer := range e.peers {
		if d != e.me {
			ops = append(ops, collective.SendOp(peer, e.tag, collective.F32(e.part(e.me))), collective.RecvOp(peer, e.tag, collective.F32(e.part(d))))
		}
	}
	e.h = e.comm.Batch(ops...)
	return e.wait(ctx, timeout, "all-gather")
}

func (e *dpExchange) wait(ctx context.Context, timeout time.Duration, phase string) error {
	wctx, cancel := waitCtx(ctx, timeout)
	defer cancel()
	if err := e.h.Wait(wctx); err != nil {
		return fmt.Errorf("%s: %w", phase, err)
	}
	return nil
}

// sumOwn sums part me over the replicas in replica order. TreeSum adds in
// place into parts[0]: this replica's own part on replica 0, replica 0's
// received piece elsewhere (copied back).
func (e *dpExchange) sumOwn() error {
	own := e.part(e.me)
	if len(own) == 0 {
		return nil
	}
	parts := make([][]float32, len(e.peers))
	for d := range parts {
		if d == e.me {
			parts[d] = own
		} else {
			parts[d] = e.slot(d)
		}
	}
	sum, err := models.TreeSum(e.be, parts)
	if err != nil {
		return err
	}
	if &sum[0] != &own[0] {
		copy(own, sum)
	}
	return nil
}

// startReduce starts stage s's data-parallel exchange as soon as the stage's
// last backward is done.
func (t *trainer) startReduce(s int) error {
	if t.dp == nil {
		t.dp = map[int]*dpExchange{}
	}
	e := t.dp[s]
	if e == nil {
		peers := make([]int, t.cfg.DP)
		for d := range peers {
			peers[d] = t.world(t.pRank, d)
		}
		e = newDPExchange(t.job.Comm, t.job.Backend, peers, t.dRank, t.stages[s].GradBuffer())
		t.dp[s] = e
	}
	e.start(collective.Tag{Kind: collective.Data, Chunk: uint16(s), Step: uint32(t.curStep)})
	return nil
}

// finishReduce completes every stage's exchange, so dp replicas give the
// bits of one process accumulating all their micro-batches.
func (t *trainer) finishReduce(ctx context.Context, step int) error {
	for _, s := range t.order {
		e := t.dp[s]
		if e == nil || e.h == nil {
			return fmt.Errorf("step %d: stage %d never finished its backward", step, s)
		}
		err := e.finish(ctx, t.cfg.Timeout)
		e.h = nil
		if err != nil {
			return fmt.Errorf("step %d: data-parallel gradient exchange of stage %d: %w", step, s, err)
		}
	}
	return nil
}
