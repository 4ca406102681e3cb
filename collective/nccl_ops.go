package collective

import (
	"context"
	"fmt"
	"time"

	"github.com/pplaunch/pplaunch/cbits"
)

// ncclType is the NCCL data type of d.
func ncclType(d DType) cbits.NCCLDataType {
	switch d {
	case Float32:
		return cbits.NCCLFloat32
	case Float64:
		return cbits.NCCLFloat64
	case BFloat16:
		return cbits.NCCLBfloat16
	}
	return cbits.NCCLUint8
}

func (c *ncclComm) checkPeer(peer int) error {
	if peer < 0 || peer >= len(c.ranks) {
		return fmt.Errorf("rank %d: peer %d out of range [0,%d)", c.ranks[c.me], peer, len(c.ranks))
	}
	if c.closed.Load() {
		return fmt.Errorf("rank %d: %w", c.ranks[c.me], ErrClosed)
	}
	return nil
}

func (c *ncclComm) Isend(peer int, tag Tag, buf Buffer) *Handle {
	return c.p2p(SendOp(peer, tag, buf))
}

func (c *ncclComm) Irecv(peer int, tag Tag, buf Buffer) *Handle {
	return c.p2p(RecvOp(peer, tag, buf))
}

func (c *ncclComm) Batch(ops ...Op) *Handle { return c.p2p(ops...) }

func (c *ncclComm) Send(ctx context.Context, peer int, tag Tag, buf Buffer) error {
	return c.Isend(peer, tag, buf).Wait(ctx)
}

func (c *ncclComm) Recv(ctx context.Context, peer int, tag Tag, buf Buffer) error {
	return c.Irecv(peer, tag, buf).Wait(ctx)
}

// p2p issues ops as one NCCL group on the communication stream.
func (c *ncclComm) p2p(ops ...Op) *Handle {
	h := newHandle(c.tr, nil, c.w.wd, len(ops)) // no links to poll: a Wait parks
	for _, o := range ops {
		if err := c.checkPeer(o.Peer); err != nil {
			return failedHandle(err)
		}
		if o.Tag.Kind >= KindReserved {
			return failedHandle(fmt.Errorf("rank %d: tag kind %d is reserved for the communicator", c.ranks[c.me], o.Tag.Kind))
		}
		if err := o.Buf.checkDevice(); err != nil {
			return failedHandle(fmt.Errorf("rank %d: %s: %w", c.ranks[c.me], o.Tag, err))
		}
		x := &h.one
		if cap(h.ops) > 1 {
			x = new(op)
		}
		*x = op{h: h, send: !o.Recv, peer: c.ranks[o.Peer], group: c.id, tag: o.Tag, buf: o.Buf}
		h.ops = append(h.ops, x)
	}
	if len(ops) == 0 {
		return h
	}
	j := &ncclJob{c: c, ops: h.ops}
	api := c.w.api
	c.w.issue(j, func() error {
		if err := api.GroupStart(); err != nil {
			return err
		}
		for i, o := range ops {
			b := h.ops[i].buf
			p, n, dt := cbits.DevPtr(b.Device.Ptr), b.Len(), ncclType(b.DType)
			var err error
			if o.Recv {
				err = api.Recv(p, n, dt, o.Peer, c.comm, c.stream)
			} else {
				err = api.Send(p, n, dt, o.Peer, c.comm, c.stream)
			}
			if err != nil {
				_ = api.GroupEnd()
				return err
			}
		}
		return api.GroupEnd()
	})
	return h
}

// ncclRedOp maps op; ok is false for an op NCCL does not have.
func ncclRedOp(op ReduceOp) (cbits.NCCLRedOp, bool) {
	switch op {
	case Sum:
		return cbits.NCCLSum, true
	case Avg:
		return cbits.NCCLAvg, true
	case Max:
		return cbits.NCCLMax, true
	}
	return 0, false
}

func (c *ncclComm) AllReduce(ctx context.Context, buf Buffer, op ReduceOp) error {
	me := c.ranks[c.me]
	if err := buf.checkDevice(); err != nil {
		return fmt.Errorf("rank %d: all-reduce: %w", me, err)
	}
	if buf.DType != Float32 && buf.DType != Float64 {
		return fmt.Errorf("rank %d: all-reduce: %s data: float32 or float64 only", me, buf.DType)
	}
	nop, ok := ncclRedOp(op)
	if !ok {
		return fmt.Errorf("rank %d: all-reduce: unknown op %d", me, op)
	}
	if c.closed.Load() {
		return fmt.Errorf("rank %d: all-reduce: %w", me, ErrClosed)
	}
	p, n, dt := cbits.DevPtr(buf.Device.Ptr), buf.Len(), ncclType(buf.DType)
	what := fmt.Sprintf("all-reduce call=%d (%s%v, %s)", c.seq.Add(1), buf.DType, buf.Shape, op)
	return c.collective(ctx, what, func() error { return c.w.api.AllReduce(p, p, n, dt, nop, c.comm, c.stream) })
}

func (c *ncclComm) Broadcast(ctx context.Context, buf Buffer, root int) error {
	me := c.ranks[c.me]
	if err := buf.checkDevice(); err != nil {
		return fmt.Errorf("rank %d: broadcast: %w", me, err)
	}
	if err := c.checkPeer(root); err != nil {
		return fmt.Errorf("rank %d: broadcast root: %w", me, err)
	}
	p, n, dt := cbits.DevPtr(buf.Device.Ptr), buf.Len(), ncclType(buf.DType)
	what := fmt.Sprintf("broadcast call=%d (%s%v from rank %d)", c.seq.Add(1), buf.DType, buf.Shape, c.ranks[root])
	return c.collective(ctx, what, func() error { return c.w.api.Broadcast(p, p, n, dt, root, c.comm, c.stream) })
}

// Barrier all-reduces one element of scratch device memory.
func (c *ncclComm) Barrier(ctx context.Context) error {
	if c.closed.Load() {
		return fmt.Errorf("rank %d: barrier: %w", c.ranks[c.me], ErrClosed)
	}
	p := c.w.scratch
	what := fmt.Sprintf("barrier call=%d", c.seq.Add(1))
	return c.collective(ctx, what, func() error {
		return c.w.api.AllReduce(p, p, 1, cbits.NCCLFloat32, cbits.NCCLSum, c.comm, c.stream)
	})
}

// collective issues one group operation and waits for it: with ctx's
// deadline or the default timeout, after which the world is aborted.
func (c *ncclComm) collective(ctx context.Context, what string, enqueue func() error) error {
	j := &ncclJob{c: c, done: make(chan error, 1)}
	c.w.issue(j, enqueue)
	start := RunNow() // time stopped is not time waited
	var expire <-chan struct{}
	if _, ok := ctx.Deadline(); !ok {
		tctx, cancel := RunTimeout(context.Background(), c.w.opts.Timeout)
		defer cancel()
		expire = tctx.Done()
	}
	var err error
	select {
	case err = <-j.done:
	case <-ctx.Done():
		err = fmt.Errorf("timeout after %v (%w)", (RunNow() - start).Round(time.Millisecond), ctx.Err())
	case <-expire:
		err = fmt.Errorf("timeout after %v (%w)", c.w.opts.Timeout, context.DeadlineExceeded)
	}
	if err == nil {
		return nil
	}
	// Aborting the world stops the operation (and fails j): after it, NCCL
	// no longer uses buf.
	c.w.abort(fmt.Errorf("%w by rank %d: %s: %w", ErrAborted, c.w.rank, what, err))
	return fmt.Errorf("rank %d: %s: %w", c.w.rank, what, err)
}
