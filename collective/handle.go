package collective

import (
	"context"
	"errors"
	"fmt"
	"runtime"
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

// finish completes o once; err (if any) is wrapped with o's description and
// peer (OpError).
func (o *op) finish(err error) {
	if !o.finished.CompareAndSwap(false, true) {
		return
	}
	if err != nil {
		if ce := o.cancelErr.Load(); ce != nil {
			err = *ce // a cancelled op reports the timeout, not the broken link it caused
		}
		err = &OpError{Peer: o.peer, Op: o.describe(), Err: err}
	}
	o.h.complete(err)
}

// Handle tracks non-blocking operations (one Isend or Irecv, or a Batch).
// The buffers of its operations belong to the communicator until the handle
// is done; after Wait returns, they are the caller's again.
type Handle struct {
	ops []*op
	t   canceller
	p   poller    // nil: Wait parks at once
	wd  *watchdog // enforces the default timeout when Wait's context has no deadline

	// Kept by wd while a Wait blocks: the list links, how many Waits
	// hold the handle there, and when it expires.
	wprev, wnext *Handle
	watchers     int
	expires      time.Duration // on the run clock (RunNow)

	pending atomic.Int32
	mu      sync.Mutex
	err     error
	done    chan struct{} // made when someone must block (Done, a parking Wait); closed when pending reaches 0

	parked  bool        // a Wait got past polling: see reusable
	settled atomic.Bool // complete has finished with h

	// A handle of one operation carries it inline: one allocation less.
	one    op
	oneRef [1]*op
}

// closedChan is the Done channel of every handle that finished before anyone
// asked for one: most small sends and many receives never need a channel.
var closedChan = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

func newHandle(t canceller, p poller, wd *watchdog, n int) *Handle {
	h := &Handle{t: t, p: p, wd: wd}
	h.init(n)
	return h
}

// handlePool holds the handles of blocking Sends and Recvs for reuse.
var handlePool = sync.Pool{New: func() any { return new(Handle) }}

// reset readies a pooled handle for one operation.
func (h *Handle) reset(t transport, wd *watchdog) {
	*h = Handle{t: t, p: t, wd: wd}
	h.init(1)
}

// reusable reports whether nothing can touch h any more: the goroutine that
// completed its last operation is done with it (Wait may see the operations
// finished a moment before), and no Wait ever parked (a parked Wait registers
// h with the watchdog, and a cancelled one passes h to the transport).
func (h *Handle) reusable() bool { return h.settled.Load() && !h.parked }

func (h *Handle) init(n int) {
	if n == 1 {
		h.ops = h.oneRef[:0:1]
	} else {
		h.ops = make([]*op, 0, n)
	}
	h.pending.Store(int32(n))
	if n == 0 {
		h.done = closedChan
	}
}

// failedHandle returns a handle that is already done with err.
func failedHandle(err error) *Handle {
	return &Handle{done: closedChan, err: err}
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
		h.mu.Lock()
		if h.done == nil {
			h.done = closedChan
		} else {
			close(h.done)
		}
		h.mu.Unlock()
		h.settled.Store(true) // the last touch of h by whoever completed it
	}
}

// Done is closed when every operation of the handle has finished.
func (h *Handle) Done() <-chan struct{} {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.done == nil {
		h.done = make(chan struct{})
	}
	return h.done
}

// finished reports whether every operation of the handle has finished.
func (h *Handle) finished() bool { return h.pending.Load() <= 0 }

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
	if h.finished() {
		return h.Err()
	}
	if h.p != nil && h.p.polls() {
		// The links poll their sockets, and Wait polls as well, yielding to
		// the links in turn, which saves parking and waking this goroutine.
		// A yield to a polling reader takes about one system call, so this
		// is bounded by count rather than by the clock, costly to read here.
		for range waitPolls {
			runtime.Gosched()
			if h.finished() {
				break
			}
		}
		if h.finished() {
			return h.Err()
		}
	}
	h.parked = true
	start := RunNow() // time stopped is not time waited
	if _, ok := ctx.Deadline(); !ok && h.wd != nil {
		h.wd.watch(h, start)
		defer h.wd.unwatch(h)
	}
	done := h.Done()
	select {
	case <-done:
		return h.Err()
	case <-ctx.Done():
		waited := (RunNow() - start).Round(time.Millisecond)
		h.cancel(fmt.Errorf("timeout after %v (%w)", waited, ctx.Err()))
		<-done
		return h.Err()
	}
}

// waitPolls is how many times a Wait yields to the link's goroutines
// before it parks: tens of
// microseconds, which covers the last piece of a large receive or the
// writing of a send without a park; the goroutines keep polling after it.
const waitPolls = 64

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
			<-h.Done()
			continue
		}
		if err := h.Wait(ctx); err != nil {
			first = err
		}
	}
	return first
}

// watchdog enforces a communicator's default timeout on the Waits whose
// context has no deadline, on the run clock (runclock.go). One goroutine, running only while something waits,
// looks over the waiting handles a few times per timeout and cancels the
// expired ones, so a Wait arms no timer of its own: starting and stopping a
// runtime timer for every message would sit on the small-message latency
// path, as the write deadlines this package no longer sets did.
type watchdog struct {
	timeout time.Duration

	mu      sync.Mutex
	head    *Handle
	running bool
}

func newWatchdog(timeout time.Duration) *watchdog { return &watchdog{timeout: timeout} }

// tick is how often the watchdog looks: a tenth of the timeout, between 1 ms
// and 1 s, so a timeout fires at most 10% (or 1 s) late.
func (w *watchdog) tick() time.Duration {
	return min(max(w.timeout/10, time.Millisecond), time.Second)
}

func (w *watchdog) watch(h *Handle, start time.Duration) {
	w.mu.Lock()
	h.watchers++
	if h.watchers == 1 {
		h.expires = start + w.timeout
		h.wprev, h.wnext = nil, w.head
		if w.head != nil {
			w.head.wprev = h
		}
		w.head = h
	}
	run := !w.running
	w.running = true
	w.mu.Unlock()
	if run {
		go w.loop()
	}
}

func (w *watchdog) unwatch(h *Handle) {
	w.mu.Lock()
	if h.watchers > 0 {
		h.watchers--
		if h.watchers == 0 {
			w.unlink(h)
		}
	}
	w.mu.Unlock()
}

func (w *watchdog) unlink(h *Handle) {
	if h.wprev != nil {
		h.wprev.wnext = h.wnext
	} else {
		w.head = h.wnext
	}
	if h.wnext != nil {
		h.wnext.wprev = h.wprev
	}
	h.wprev, h.wnext = nil, nil
}

// loop cancels the handles whose time is up; it ends after two looks at an
// empty list, and the next watch starts it again.
func (w *watchdog) loop() {
	t := time.NewTicker(w.tick())
	defer t.Stop()
	theRunClock.acquire() // observed between the ticks, however far apart
	defer theRunClock.release()
	idle := 0
	for range t.C {
		var expired []*Handle
		now := RunNow()
		w.mu.Lock()
		for h := w.head; h != nil; h = h.wnext {
			if now >= h.expires {
				expired = append(expired, h)
			}
		}
		for _, h := range expired {
			h.watchers = 0
			w.unlink(h)
		}
		if w.head == nil && len(expired) == 0 {
			idle++
		} else {
			idle = 0
		}
		if idle >= 2 {
			w.running = false
			w.mu.Unlock()
			return
		}
		w.mu.Unlock()
		for _, h := range expired {
			h.cancel(fmt.Errorf("timeout after %v (%w)", w.timeout, context.DeadlineExceeded))
		}
	}
}
