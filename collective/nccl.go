package collective

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pplaunch/pplaunch/cbits"
	"github.com/pplaunch/pplaunch/store"
)

// NCCLOptions configure NewNCCL.
type NCCLOptions struct {
	Options
	// Device runs the CUDA and NCCL calls (required): the CUDA tensor
	// backend's device thread, or NewDeviceThread's.
	Device DeviceThread
	// StorePrefix namespaces the store keys of the unique ids (default "nccl").
	StorePrefix string
	// CUDA and NCCL are the loaded libraries; nil loads them.
	CUDA *cbits.CUDALibs
	NCCL *cbits.NCCLLib

	// API, when set, stands in for the libraries (CUDA and NCCL are then
	// unused): tests on machines without a GPU pass collective/ncclfake's.
	API NCCLAPI
}

// NewNCCL joins the NCCL communicator of rank among size ranks, on the GPU of
// opts.Device: rank 0 makes the unique id and passes it through the store
// (which the launcher authenticated), every rank initialises a non-blocking
// communicator and polls it against ctx's deadline (or opts.Timeout).
//
// Buffers are device memory (OnDevice); host buffers are refused. Transfers
// run on a communication stream of its own, after the work queued on the
// compute stream when they are issued; Batch is one NCCL group. NCCL pairs
// sends and receives by order per peer and carries no header: issue them as
// the Comm contract says (schedules.CheckPairing checks a schedule) and check
// shapes with CheckShapes over a host communicator. Every wait polls the
// transfer's event and the communicator's asynchronous state; on a timeout
// or an NCCL failure the communicators are aborted, and the error names the
// operation, the peer and the time waited, as on TCP.
func NewNCCL(ctx context.Context, st store.Store, rank, size int, opts NCCLOptions) (Comm, error) {
	if size < 1 || rank < 0 || rank >= size {
		return nil, fmt.Errorf("collective: nccl rank %d of %d", rank, size)
	}
	if opts.Device == nil {
		return nil, errors.New("collective: nccl needs the device thread of the rank's GPU (NCCLOptions.Device)")
	}
	api := opts.API
	if api == nil {
		var err error
		if opts.NCCL == nil {
			if opts.NCCL, err = cbits.LoadNCCL(); err != nil {
				return nil, fmt.Errorf("collective: nccl: %w", err)
			}
		}
		if opts.CUDA == nil {
			if opts.CUDA, err = cbits.LoadCUDA(); err != nil {
				return nil, fmt.Errorf("collective: nccl: %w", err)
			}
		}
		api = ncclLibs{n: opts.NCCL, c: opts.CUDA}
	}
	if opts.StorePrefix == "" {
		opts.StorePrefix = "nccl"
	}
	o := opts.Options.withDefaults()
	w := &ncclWorld{api: api, dev: opts.Device, opts: o, wd: newWatchdog(o.Timeout), st: st, prefix: opts.StorePrefix,
		rank: rank, size: size, compute: cbits.Stream(opts.Device.ComputeStream())}
	ranks := make([]int, size)
	for i := range ranks {
		ranks[i] = i
	}
	c := &ncclComm{w: w, ranks: ranks, me: rank, groups: map[uint32]int{}}
	c.tr = &ncclCanceller{c: c}
	if err := c.join(ctx, "world", func(id cbits.NCCLUniqueID) (cbits.NCCLComm, error) {
		return api.CommInitRank(size, id, rank, false)
	}); err != nil {
		return nil, fmt.Errorf("rank %d: nccl communicator: %w", rank, err)
	}
	err := w.dev.Call(func() (err error) {
		w.scratch, err = api.Malloc(8)
		return err
	})
	if err != nil {
		c.destroy()
		return nil, fmt.Errorf("rank %d: nccl communicator: %w", rank, err)
	}
	return c, nil
}

// ncclWorld is what the world communicator and its groups share.
type ncclWorld struct {
	api        NCCLAPI
	dev        DeviceThread
	opts       Options
	wd         *watchdog
	st         store.Store
	prefix     string
	rank, size int
	compute    cbits.Stream
	scratch    cbits.DevPtr // the barrier's element

	gone atomic.Pointer[error] // set once the world is aborted

	settlers sync.WaitGroup // settle goroutines: Close waits for them, they use the device thread

	mu      sync.Mutex
	comms   []*ncclComm // live communicators, for abort
	pending []*ncclJob  // jobs in flight
	polling bool
	events  []cbits.Event // free events (used on the device thread only)
}

func (w *ncclWorld) goneErr() error {
	if p := w.gone.Load(); p != nil {
		return *p
	}
	return nil
}

// ncclComm is the world communicator or a group of it.
type ncclComm struct {
	w      *ncclWorld
	tr     *ncclCanceller
	comm   cbits.NCCLComm
	stream cbits.Stream
	ranks  []int // world rank of each member
	me     int
	id     uint32 // 0 for the world
	seq    atomic.Uint32
	closed atomic.Bool

	mu     sync.Mutex
	groups map[uint32]int

	// On the device thread only: the call NCCL is still setting up (its
	// settler polls it) and the calls issued after it.
	settling *ncclJob
	backlog  []queuedCall
}

func (c *ncclComm) Rank() int              { return c.me }
func (c *ncclComm) Size() int              { return len(c.ranks) }
func (c *ncclComm) WorldRank(rank int) int { return c.ranks[rank] }

// initPoll is how often a communicator being set up is polled.
const initPoll = time.Millisecond

// join makes c's NCCL communicator with make, rank 0 of c (in c.ranks)
// having put a fresh unique id under key in the store, and polls it until
// it is ready, aborting it if ctx (or the default timeout) ends first.
func (c *ncclComm) join(ctx context.Context, key string, mk func(cbits.NCCLUniqueID) (cbits.NCCLComm, error)) error {
	w := c.w
	ctx, cancel := context.WithTimeout(ctx, w.opts.Timeout)
	defer cancel()
	k := w.prefix + "/id/" + key
	var id cbits.NCCLUniqueID
	if c.me == 0 {
		var err error
		if id, err = w.api.UniqueID(); err != nil {
			return err
		}
		if err := w.st.Set(ctx, k, id[:]); err != nil {
			return fmt.Errorf("store the unique id: %w", err)
		}
	} else {
		v, err := w.st.Get(ctx, k)
		if err != nil {
			return fmt.Errorf("unique id of rank %d from the store: %w", c.ranks[0], err)
		}
		if len(v) != len(id) {
			return fmt.Errorf("unique id of rank %d from the store has %d bytes, want %d", c.ranks[0], len(v), len(id))
		}
		copy(id[:], v)
	}
	return c.setup(ctx, func() (cbits.NCCLComm, error) { return mk(id) })
}

// setup creates c's communicator with mk (init or split) and its stream on
// the device thread, and polls it until it is ready.
func (c *ncclComm) setup(ctx context.Context, mk func() (cbits.NCCLComm, error)) error {
	w := c.w
	err := w.dev.Call(func() error {
		comm, err := mk()
		if err != nil && !cbits.IsNCCLInProgress(err) {
			return err
		}
		c.comm = comm
		c.stream, err = w.api.StreamCreate()
		return err
	})
	for err == nil {
		var st error
		err = w.dev.Call(func() error { st = w.api.CommGetAsyncError(c.comm); return nil })
		if err != nil || !cbits.IsNCCLInProgress(st) {
			if err == nil {
				err = st
			}
			break
		}
		t := time.NewTimer(initPoll)
		select {
		case <-ctx.Done():
			t.Stop()
			err = fmt.Errorf("timeout after %v waiting for all %d ranks (%w)", w.opts.Timeout, len(c.ranks), ctx.Err())
		case <-t.C:
		}
	}
	if err != nil {
		c.destroyWith(true)
		return err
	}
	w.mu.Lock()
	w.comms = append(w.comms, c)
	w.mu.Unlock()
	return nil
}

// Group makes the sub-communicator of ranks. When ranks lists every member
// (a reordering), all of them call it and it is an ncclCommSplit; otherwise
// only the listed ranks call it and they initialise a communicator of their
// own from a unique id that the group's first rank puts in the store, so
// that the Comm contract (the others need not call) holds.
func (c *ncclComm) Group(ranks []int) (Comm, error) {
	world, me, err := groupMembers(c.ranks, c.me, ranks)
	if err != nil {
		return nil, err
	}
	g := &ncclComm{w: c.w, ranks: world, me: me, id: nextGroupID(c.id, world, &c.mu, c.groups), groups: map[uint32]int{}}
	g.tr = &ncclCanceller{c: g}
	ctx := context.Background()
	if len(ranks) == len(c.ranks) {
		err = g.setup(ctx, func() (cbits.NCCLComm, error) { return c.w.api.CommSplit(c.comm, 0, me, false) })
	} else {
		err = g.join(ctx, fmt.Sprintf("group/%08x", g.id), func(id cbits.NCCLUniqueID) (cbits.NCCLComm, error) {
			return c.w.api.CommInitRank(len(world), id, me, false)
		})
	}
	if err != nil {
		return nil, fmt.Errorf("rank %d: nccl group %v: %w", c.ranks[c.me], ranks, err)
	}
	return g, nil
}

// groupMembers checks a group's rank list and returns its world ranks and
// this rank's place in it.
func groupMembers(parent []int, self int, ranks []int) ([]int, int, error) {
	if len(ranks) == 0 {
		return nil, 0, fmt.Errorf("rank %d: empty group", parent[self])
	}
	me := -1
	seen := map[int]bool{}
	world := make([]int, len(ranks))
	for i, r := range ranks {
		if r < 0 || r >= len(parent) || seen[r] {
			return nil, 0, fmt.Errorf("rank %d: group %v: rank %d is out of range [0,%d) or repeated", parent[self], ranks, r, len(parent))
		}
		seen[r] = true
		world[i] = parent[r]
		if r == self {
			me = i
		}
	}
	if me < 0 {
		return nil, 0, fmt.Errorf("rank %d: group %v does not include this rank (%d)", parent[self], ranks, self)
	}
	return world, me, nil
}

// Close waits for nothing: pending operations fail. The world's Close
// destroys every communicator and frees the stream and events.
func (c *ncclComm) Close() error {
	if c.closed.Swap(true) {
		return nil
	}
	if c.id != 0 {
		c.w.mu.Lock()
		c.w.comms = slices.DeleteFunc(c.w.comms, func(g *ncclComm) bool { return g == c })
		c.w.mu.Unlock()
		return c.destroy()
	}
	c.w.failPending(fmt.Errorf("rank %d: %w", c.w.rank, ErrClosed))
	c.w.mu.Lock()
	comms := c.w.comms
	c.w.comms = nil
	c.w.mu.Unlock()
	var errs []error
	for _, g := range comms {
		errs = append(errs, g.destroy())
	}
	w := c.w
	w.settlers.Wait() // each sees its communicator gone at its next poll
	_ = w.dev.Call(func() error {
		for _, e := range w.events {
			_ = w.api.EventDestroy(e)
		}
		w.events = nil
		if w.scratch != 0 {
			_ = w.api.Free(w.scratch)
		}
		return nil
	})
	return errors.Join(errs...)
}

func (c *ncclComm) destroy() error { return c.destroyWith(false) }

// destroyWith destroys (or aborts) c's communicator and stream.
func (c *ncclComm) destroyWith(abort bool) error {
	w := c.w
	return w.dev.Call(func() error {
		var err error
		if c.comm != 0 {
			if abort {
				err = w.api.CommAbort(c.comm)
			} else {
				err = w.api.CommDestroy(c.comm)
			}
			c.comm = 0
		}
		if c.stream != 0 {
			_ = w.api.StreamDestroy(c.stream)
			c.stream = 0
		}
		return err
	})
}

func (c *ncclComm) Abort(err error) {
	if err == nil {
		err = errors.New("no reason given")
	}
	c.w.abort(fmt.Errorf("%w by rank %d: %w", ErrAborted, c.w.rank, err))
}

// MovesDevice is true: an NCCL communicator (or one of its groups) moves
// device memory itself.
func (c *ncclComm) MovesDevice() bool { return true }
