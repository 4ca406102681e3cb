package collective

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// ErrClosed is returned by operations on a communicator that has been closed.
var ErrClosed = errors.New("communicator closed")

// ErrAborted wraps the cause given to Abort in the errors of every operation
// that Abort woke.
var ErrAborted = errors.New("communicator aborted")

// op is one send or receive in flight.
type op struct {
	h     *Handle
	send  bool
	peer  int // world rank of the other side
	group uint32
	tag   Tag
	buf   Buffer
	hdr   header // the frame header, for sends

	finished  atomic.Bool
	cancelErr atomic.Pointer[error] // why o was cancelled, if it was
}

// describe names the operation for error messages, e.g.
// "recv activation chunk=0 step=3 mb=2 from rank 1".
func (o *op) describe() string {
	dir, prep := "recv", "from"
	if o.send {
		dir, prep = "send", "to"
	}
	g := ""
	if o.group != 0 {
		g = fmt.Sprintf(" (group %08x)", o.group)
	}
	return fmt.Sprintf("%s %s %s rank %d%s", dir, o.tag, prep, o.peer, g)
}

// finish completes o once; err (if any) is wrapped with o's description.
func (o *op) finish(err error) {
	if !o.finished.CompareAndSwap(false, true) {
		return
	}
	if err != nil {
		if ce := o.cancelErr.Load(); ce != nil {
			err = *ce // a cancelled op reports the timeout, not the broken link it caused
		}
		err = fmt.Errorf("%s: %w", o.describe(), err)
	}
	o.h.complete(err)
}

// Handle tracks non-blocking operations (one Isend or Irecv, or a Batch).
// The buffers of its operations belong to the communicator until the handle
// is done; after Wait returns, they are the caller's again.
type Handle struct {
	ops     []*op
	t       transport
	timeout time.Duration // used when Wait's context has no deadline
	start   time.Time

	pending atomic.Int32
	mu      sync.Mutex
	err     error
	done    chan struct{}

	// A handle of one operation carries it inline: one allocation less.
	one    op
	oneRef [1]*op
}

func newHandle(t transport, timeout time.Duration, n int) *Handle {
	h := &Handle{t: t, timeout: timeout, start: time.Now(), done: make(chan struct{})}
	if n == 1 {
		h.ops = h.oneRef[:0:1]
	} else {
		h.ops = make([]*op, 0, n)
	}
	h.pending.Store(int32(n))
	if n == 0 {
		close(h.done)
	}
	return h
}

// failedHandle returns a handle that is already done with err.
func failedHandle(err error) *Handle {
	h := &Handle{done: make(chan struct{}), err: err}
	close(h.done)
	return h
}

func (h *Handle) complete(err error) {
	if err != nil {
		h.mu.Lock()
		if h.err == nil {
			h.err = err
		}
		h.mu.Unlock()
	}
	if h.pending.Add(-1) == 0 {
		close(h.done)
	}
}

// Done is closed when every operation of the handle has finished.
func (h *Handle) Done() <-chan struct{} { return h.done }

// Err returns the first error of the handle's operations; call it after Done.
func (h *Handle) Err() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.err
}

// Wait blocks until every operation of the handle has finished and returns the
// first error. If ctx ends first (or, when ctx has no deadline, the
// communicator's default timeout passes), the unfinished operations are
// cancelled: one that has not touched the wire is withdrawn; one that has is
// stopped by breaking the link to its peer, since a half-sent frame cannot be
// resumed. Either way Wait returns only once no operation uses its buffer, with
// an error that says which operation timed out, with whom, and after how long.
func (h *Handle) Wait(ctx context.Context) error {
	select {
	case <-h.done:
		return h.Err()
	default:
	}
	var expired <-chan time.Time
	if _, ok := ctx.Deadline(); !ok && h.timeout > 0 {
		t := timerPool.Get().(*time.Timer)
		t.Reset(h.timeout)
		defer func() { t.Stop(); timerPool.Put(t) }()
		expired = t.C
	}
	var cause error
	select {
	case <-h.done:
		return h.Err()
	case <-ctx.Done():
		cause = ctx.Err()
	case <-expired:
		cause = context.DeadlineExceeded
	}
	waited := time.Since(h.start).Round(time.Millisecond)
	h.cancel(fmt.Errorf("timeout after %v (%w)", waited, cause))
	<-h.done
	return h.Err()
}

// timerPool holds the timers that enforce the default timeout, so a Wait
// without a deadline allocates nothing.
var timerPool = sync.Pool{New: func() any { t := time.NewTimer(time.Hour); t.Stop(); return t }}

// cancel stops every unfinished operation of h with err.
func (h *Handle) cancel(err error) {
	for _, o := range h.ops {
		if !o.finished.Load() {
			h.t.cancel(o, err)
		}
	}
}

var errCancelled = errors.New("cancelled after another operation of the same call failed")

// waitAll waits for every handle; on the first error it cancels the rest (so
// no buffer stays in use) and returns that error.
func waitAll(ctx context.Context, hs []*Handle) error {
	var first error
	for _, h := range hs {
		if h == nil {
			continue
		}
		if first != nil {
			h.cancel(errCancelled)
			<-h.done
			continue
		}
		if err := h.Wait(ctx); err != nil {
			first = err
		}
	}
	return first
}
