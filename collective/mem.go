package collective

import (
	"fmt"
	"sync"
)

// NewMemoryWorld returns the communicators of size ranks that live in this
// process (one per goroutine rank) and exchange messages by copying memory.
// It is the fake beside the TCP backend: same semantics, no sockets, for fast
// tests of the packages above.
func NewMemoryWorld(size int, opts Options) ([]Comm, error) {
	if size < 1 {
		return nil, fmt.Errorf("collective: memory world of %d ranks", size)
	}
	w := &memWorld{eps: make([]*memEndpoint, size)}
	comms := make([]Comm, size)
	for r := range size {
		ep := &memEndpoint{w: w, rank: r, boxes: make([]mailbox, size), pool: newStagingPool(0)}
		for i := range ep.boxes {
			ep.boxes[i].pool = ep.pool
		}
		w.eps[r] = ep
		comms[r] = newWorld(ep, opts)
	}
	return comms, nil
}

type memWorld struct{ eps []*memEndpoint }

// memEndpoint is one rank of a memory world. boxes[src] holds the messages
// from rank src to this rank.
type memEndpoint struct {
	w     *memWorld
	rank  int
	boxes []mailbox
	pool  *stagingPool // unbounded: a sender's goroutine fills it, no socket to hold back

	mu   sync.Mutex
	gone error // set by close or abort
}

func (e *memEndpoint) worldRank() int { return e.rank }
func (e *memEndpoint) worldSize() int { return len(e.w.eps) }
func (e *memEndpoint) polls() bool    { return false }

func (e *memEndpoint) goneErr() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.gone
}

func (e *memEndpoint) post(o *op) {
	if err := e.goneErr(); err != nil {
		o.finish(err)
		return
	}
	if !o.send {
		e.boxes[o.peer].post(o, e.rank)
		return
	}
	dst := e.w.eps[o.peer]
	if err := dst.goneErr(); err != nil && o.peer != e.rank {
		o.finish(fmt.Errorf("rank %d is gone: %w", o.peer, err))
		return
	}
	deliverLocal(&dst.boxes[e.rank], o, o.peer)
}

// cancel: sends complete at once, so only a receive can still be pending,
// and it is always withdrawn whole.
func (e *memEndpoint) cancel(o *op, err error) {
	if !o.send && e.boxes[o.peer].withdraw(o) {
		o.cancelErr.Store(&err)
		o.finish(err)
	}
}

// leave marks the endpoint gone with err (own operations) and tells every
// other rank's receives from it that it left with peerErr.
func (e *memEndpoint) leave(err, peerErr error) {
	e.mu.Lock()
	if e.gone != nil {
		e.mu.Unlock()
		return
	}
	e.gone = err
	e.mu.Unlock()
	for i := range e.boxes {
		e.boxes[i].fail(err)
	}
	for _, other := range e.w.eps {
		if other != e {
			other.boxes[e.rank].fail(peerErr)
		}
	}
}

func (e *memEndpoint) abort(err error) {
	e.leave(err, fmt.Errorf("rank %d aborted: %w", e.rank, err))
}

func (e *memEndpoint) close() error {
	e.leave(ErrClosed, fmt.Errorf("rank %d closed its communicator", e.rank))
	return nil
}
