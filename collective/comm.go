package collective

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"sync"
	"sync/atomic"
	"time"
)

// Comm is one rank's communicator: point-to-point transfers to any member and
// group operations over all members. Ranks are numbered 0..Size()-1 within the
// communicator (for a sub-group, within the group).
//
// Point-to-point calls may be made from any goroutine. Messages between two
// ranks with the same Tag arrive in the order they were sent; a receive takes
// the oldest message with its tag. Backends that pair transfers by order (as NCCL
// does) need every rank to issue its sends and receives to a given peer in the same
// order as that peer issues the matching ones, and a send and a receive with
// the same peer that must progress together to be issued in one Batch; code
// that keeps both rules runs on every backend.
//
// Group operations (AllReduce, Broadcast, Barrier, Group) are collective: every
// member calls them in the same order, one at a time per communicator.
//
// Every blocking call and Handle.Wait honour the context; when it has no
// deadline, the communicator's default timeout applies. A timed-out or failed
// call returns only once it no longer uses the caller's buffers.
type Comm interface {
	// Rank is this rank's number in the communicator.
	Rank() int
	// Size is the number of ranks in the communicator.
	Size() int
	// WorldRank maps a rank of this communicator to its rank in the world.
	WorldRank(rank int) int

	// Send sends buf to peer and returns once buf may be reused.
	Send(ctx context.Context, peer int, tag Tag, buf Buffer) error
	// Recv receives the next message with tag from peer into buf. The message
	// must have buf's dtype and shape.
	Recv(ctx context.Context, peer int, tag Tag, buf Buffer) error
	// Isend starts a send; buf must not change until the handle is done. A
	// send that is done has left buf, not necessarily reached the peer; a
	// backend may finish a send before Isend returns (the TCP backend writes
	// or copies small ones at once: see tcpsend.go).
	Isend(peer int, tag Tag, buf Buffer) *Handle
	// Irecv posts a receive into buf, which is written in place (no copy when
	// the receive is posted before the message arrives).
	Irecv(peer int, tag Tag, buf Buffer) *Handle
	// Batch starts several sends and receives together (NCCL's group calls):
	// a send and a receive with the same peer in one batch cannot deadlock
	// each other. The handle is done when all are.
	Batch(ops ...Op) *Handle

	// AllReduce replaces buf on every rank with the element-wise reduction of
	// all ranks' buf (float32 or float64; same length everywhere). Every rank
	// ends with the same bits.
	AllReduce(ctx context.Context, buf Buffer, op ReduceOp) error
	// Broadcast copies root's buf into every other rank's buf.
	Broadcast(ctx context.Context, buf Buffer, root int) error
	// Barrier returns once every rank has entered it.
	Barrier(ctx context.Context) error
	// Group returns the sub-communicator of the given ranks of this
	// communicator (in that order: ranks[i] becomes rank i). Every listed rank
	// calls it with the same list; the others need not. Sub-groups share their
	// parent's connections.
	Group(ranks []int) (Comm, error)
	// MovesDevice reports whether the communicator moves device memory
	// itself (NCCL): a stage loop then hands it device tensors as they are
	// (OnDevice), where a host communicator needs them staged through host
	// memory.
	MovesDevice() bool

	// Close shuts the communicator down gracefully: peers waiting on this rank
	// get an error naming it. Closing a sub-group closes only the group.
	Close() error
	// Abort fails every pending and future operation of the whole world with
	// err (wrapped in ErrAborted) and drops all connections, so that every
	// waiter on this rank wakes at once and peers see this rank gone.
	Abort(err error)
}

// Op is one send or receive of a Batch.
type Op struct {
	Recv bool
	Peer int
	Tag  Tag
	Buf  Buffer
}

// SendOp is a send for Batch.
func SendOp(peer int, tag Tag, buf Buffer) Op { return Op{Peer: peer, Tag: tag, Buf: buf} }

// RecvOp is a receive for Batch.
func RecvOp(peer int, tag Tag, buf Buffer) Op { return Op{Recv: true, Peer: peer, Tag: tag, Buf: buf} }

// ReduceOp is the element-wise reduction of AllReduce.
type ReduceOp uint8

const (
	Sum ReduceOp = iota
	Avg
	Max
)

func (r ReduceOp) String() string {
	switch r {
	case Sum:
		return "sum"
	case Avg:
		return "avg"
	case Max:
		return "max"
	}
	return fmt.Sprintf("reduce(%d)", uint8(r))
}

// Options tune a communicator; the zero value means the defaults.
type Options struct {
	// Timeout bounds every wait whose context has no deadline (default 5m).
	Timeout time.Duration
	// SmallBytes: all-reduces and broadcasts of at most this many bytes send
	// whole buffers directly between ranks, in one round (default 64 KiB).
	// Larger ones use a pipelined ring (all-reduce) or chain (broadcast).
	SmallBytes int
	// SegmentBytes is the piece size that large all-reduces and broadcasts are
	// pipelined in. By default 1 MiB, or 4 MiB when the transport does not
	// poll (more ranks than CPUs on a host), where every message is a wake-up
	// through the kernel. On the 2-core development machine (`pplaunch
	// --nproc N bench allreduce --min 16M --max 32M [--segment S]`, 4
	// alternating rounds): 4 ranks, 16 MiB, 26.6 ms with 4 MiB pieces against
	// 27.7 with 1 MiB; 2 ranks, 10.1 and 21.8 ms with 1 MiB pieces against
	// 11.2 and 24.0 with 4 MiB.
	SegmentBytes int
}

// segmentBytes is the pipelining piece size in use (see SegmentBytes).
func (c *comm) segmentBytes() int {
	switch {
	case c.opts.SegmentBytes > 0:
		return c.opts.SegmentBytes
	case c.t.polls():
		return 1 << 20
	}
	return 4 << 20
}

func (o Options) withDefaults() Options {
	if o.Timeout <= 0 {
		o.Timeout = 5 * time.Minute
	}
	if o.SmallBytes <= 0 {
		o.SmallBytes = 64 << 10
	}
	return o
}

// transport moves messages between world ranks; backends implement it.
type transport interface {
	canceller
	poller
	worldRank() int
	worldSize() int
	// post starts send or receive o (o.peer is a world rank).
	post(o *op)
	abort(err error)
	close() error
}

// canceller is what a Handle needs of whatever runs its operations: a
// transport, or an NCCL communicator, which runs them itself (nccl_ops.go).
type canceller interface {
	// cancel stops o with err: withdrawn if it has not touched the wire,
	// otherwise by breaking the link to o.peer. o finishes promptly after.
	cancel(o *op, err error)
}

// poller is a transport whose Handles' Waits may poll.
type poller interface {
	// polls reports whether the transport polls its links, so that a Wait
	// may poll for its handle too rather than park at once.
	polls() bool
}

// comm implements Comm over a transport; the world and every sub-group are
// comms sharing one transport.
type comm struct {
	t     transport
	opts  Options
	wd    *watchdog // shared by the world and its groups
	id    uint32    // 0 for the world
	ranks []int     // world rank of each member
	me    int
	seq   atomic.Uint32 // collective call counter, the Step of their tags

	mu      sync.Mutex
	groups  map[uint32]int // how many groups with the same id base were made
	scratch []byte         // all-reduce staging, reused across calls
	closed  atomic.Bool
}

func newWorld(t transport, opts Options) *comm {
	ranks := make([]int, t.worldSize())
	for i := range ranks {
		ranks[i] = i
	}
	o := opts.withDefaults()
	return &comm{t: t, opts: o, wd: newWatchdog(o.Timeout), ranks: ranks, me: t.worldRank(), groups: map[uint32]int{}}
}

func (c *comm) Rank() int              { return c.me }
func (c *comm) Size() int              { return len(c.ranks) }
func (c *comm) WorldRank(rank int) int { return c.ranks[rank] }

// MovesDevice is false: a transport's communicator moves host memory.
func (c *comm) MovesDevice() bool { return false }

func (c *comm) checkPeer(peer int) error {
	if peer < 0 || peer >= len(c.ranks) {
		return fmt.Errorf("rank %d: peer %d out of range [0,%d)", c.ranks[c.me], peer, len(c.ranks))
	}
	if c.closed.Load() {
		return fmt.Errorf("rank %d: %w", c.ranks[c.me], ErrClosed)
	}
	return nil
}

// newOp validates and builds one operation with a group-local peer.
func (c *comm) newOp(h *Handle, o Op, internal bool) (*op, error) {
	if err := c.checkPeer(o.Peer); err != nil {
		return nil, err
	}
	if !internal && o.Tag.Kind >= KindReserved {
		return nil, fmt.Errorf("rank %d: tag kind %d is reserved for the communicator", c.ranks[c.me], o.Tag.Kind)
	}
	if err := o.Buf.check(); err != nil {
		return nil, fmt.Errorf("rank %d: %s: %w", c.ranks[c.me], o.Tag, err)
	}
	x := &h.one
	if cap(h.ops) > 1 {
		x = new(op)
	}
	*x = op{h: h, send: !o.Recv, peer: c.ranks[o.Peer], group: c.id, tag: o.Tag, buf: o.Buf}
	if x.send {
		x.hdr = headerFor(c.id, o.Tag, o.Buf)
	}
	return x, nil
}

// start validates ops, then posts them in order under one handle.
func (c *comm) start(internal bool, ops ...Op) *Handle {
	return c.startIn(newHandle(c.t, c.t, c.wd, len(ops)), internal, ops...)
}

// startIn is start with the handle given: a fresh one, or for the blocking
// Send and Recv one from handlePool.
func (c *comm) startIn(h *Handle, internal bool, ops ...Op) *Handle {
	for _, o := range ops {
		x, err := c.newOp(h, o, internal)
		if err != nil {
			return failedHandle(err)
		}
		h.ops = append(h.ops, x)
	}
	for _, x := range h.ops {
		c.t.post(x)
	}
	return h
}

func (c *comm) Isend(peer int, tag Tag, buf Buffer) *Handle {
	return c.start(false, SendOp(peer, tag, buf))
}

func (c *comm) Irecv(peer int, tag Tag, buf Buffer) *Handle {
	return c.start(false, RecvOp(peer, tag, buf))
}

func (c *comm) Batch(ops ...Op) *Handle { return c.start(false, ops...) }

func (c *comm) Send(ctx context.Context, peer int, tag Tag, buf Buffer) error {
	return c.blocking(ctx, SendOp(peer, tag, buf))
}

func (c *comm) Recv(ctx context.Context, peer int, tag Tag, buf Buffer) error {
	return c.blocking(ctx, RecvOp(peer, tag, buf))
}

// blocking runs one operation to completion on a handle that nobody else
// sees, so it can be reused: small messages are dominated by per-message
// costs, and the handle is the largest allocation of one.
func (c *comm) blocking(ctx context.Context, o Op) error {
	h := handlePool.Get().(*Handle)
	h.reset(c.t, c.wd)
	h = c.startIn(h, false, o)
	err := h.Wait(ctx)
	if h.reusable() {
		handlePool.Put(h)
	}
	return err
}

func (c *comm) Group(ranks []int) (Comm, error) {
	if len(ranks) == 0 {
		return nil, fmt.Errorf("rank %d: empty group", c.ranks[c.me])
	}
	me := -1
	seen := map[int]bool{}
	world := make([]int, len(ranks))
	for i, r := range ranks {
		if r < 0 || r >= len(c.ranks) || seen[r] {
			return nil, fmt.Errorf("rank %d: group %v: rank %d is out of range [0,%d) or repeated", c.ranks[c.me], ranks, r, len(c.ranks))
		}
		seen[r] = true
		world[i] = c.ranks[r]
		if r == c.me {
			me = i
		}
	}
	if me < 0 {
		return nil, fmt.Errorf("rank %d: group %v does not include this rank (%d)", c.ranks[c.me], ranks, c.me)
	}
	id := nextGroupID(c.id, world, &c.mu, c.groups)
	return &comm{t: c.t, opts: c.opts, wd: c.wd, id: id, ranks: world, me: me, groups: map[uint32]int{}}, nil
}

// nextGroupID is the id of the next sub-communicator of the members world
// made from the communicator parent. Every member must agree on it without
// talking: it is derived from the parent, the member list and how many such
// groups were made before (made, guarded by mu); never 0.
func nextGroupID(parent uint32, world []int, mu *sync.Mutex, made map[uint32]int) uint32 {
	f := fnv.New32a()
	fmt.Fprint(f, parent, world)
	base := f.Sum32()
	mu.Lock()
	n := made[base]
	made[base] = n + 1
	mu.Unlock()
	f.Reset()
	fmt.Fprint(f, base, n)
	return max(f.Sum32(), 1)
}

func (c *comm) Close() error {
	if c.id != 0 {
		c.closed.Store(true)
		return nil
	}
	if c.closed.Swap(true) {
		return nil
	}
	return c.t.close()
}

func (c *comm) Abort(err error) {
	if err == nil {
		err = errors.New("no reason given")
	}
	c.t.abort(fmt.Errorf("%w by rank %d: %w", ErrAborted, c.ranks[c.me], err))
}
