package collective

import (
	"context"
	"sync"
	"time"
)

// The run clock measures how long this process has run, leaving out the
// time it was stopped (SIGSTOP, Ctrl-Z, a paused container or machine).
// Every deadline of a wait (the watchdog's, RunTimeout's) is measured on it,
// so a job stopped for longer than its timeout and continued does not find
// every wait expired at once and blame a peer that was stopped with it.
//
// Go's clocks keep running while a process is stopped, and a process cannot
// tell from a SIGCONT how long it was stopped, nor be sure to see the SIGCONT
// before a timer that expired meanwhile. So the clock is read from the gaps
// between its own observations instead: a ticker observes it every runTick
// while any deadline is armed, and a gap longer than runMaxGap between two
// observations is time the process did not run: it counts runMaxGap of it.
// Every reading is an observation, so a timer that fires the moment the
// process continues sees the gap, whichever goroutine runs first.
//
// What it costs: a stop counts at most runMaxGap against a deadline, and a
// process the machine does not schedule for longer than runMaxGap (as good
// as stopped: it could not have received anything) has its deadlines
// pushed back by the excess. A deadline never fires early.
const (
	runTick   = 100 * time.Millisecond
	runMaxGap = 4 * runTick
)

// advance is the clock's one decision: the run time after an observation
// gap since the last one. A gap over maxGap is a stop; a negative one (two
// readers racing for the lock) is none.
func advance(ran, gap, maxGap time.Duration) time.Duration {
	return ran + min(max(gap, 0), maxGap)
}

// runClock is the process's run clock (theRunClock); its zero value is ready.
type runClock struct {
	mu      sync.Mutex
	last    time.Time // the last observation
	ran     time.Duration
	users   int  // deadlines armed
	ticking bool // the ticker goroutine runs
}

var theRunClock runClock

// now observes the clock and returns the run time.
func (c *runClock) now() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.observe(time.Now())
}

func (c *runClock) observe(t time.Time) time.Duration {
	if !c.last.IsZero() {
		c.ran = advance(c.ran, t.Sub(c.last), runMaxGap)
	}
	c.last = t
	return c.ran
}

// acquire starts observing (a deadline is armed) and returns the run time.
func (c *runClock) acquire() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.users++
	if !c.ticking {
		c.ticking = true
		go c.tick()
	}
	return c.observe(time.Now())
}

// release ends one acquire.
func (c *runClock) release() {
	c.mu.Lock()
	c.users--
	c.mu.Unlock()
}

// tick observes the clock every runTick while deadlines are armed, and for
// two more ticks after the last one goes (waits come and go many times a
// second: the goroutine is not restarted for each).
func (c *runClock) tick() {
	t := time.NewTicker(runTick)
	defer t.Stop()
	idle := 0
	for now := range t.C {
		c.mu.Lock()
		c.observe(now)
		if c.users > 0 {
			idle = 0
		} else if idle++; idle >= 2 {
			c.ticking = false
			c.mu.Unlock()
			return
		}
		c.mu.Unlock()
	}
}

// RunNow is the time this process has run so far, on the run clock: what a
// deadline measured with RunTimeout counts. Only differences mean anything.
func RunNow() time.Duration { return theRunClock.now() }

// runDeadline is a context that ends once the process has run for its
// timeout (RunTimeout).
type runDeadline struct {
	context.Context // WithCancelCause of the parent
}

// Err says context.DeadlineExceeded once the run time is up, as a context
// of context.WithTimeout would.
func (c runDeadline) Err() error {
	err := c.Context.Err()
	if err != nil && context.Cause(c.Context) == context.DeadlineExceeded {
		return context.DeadlineExceeded
	}
	return err
}

// Deadline says there is none on the wall clock: the context ends on the run
// clock, at a moment no wall-clock time states (the process may yet be
// stopped). Code that would turn it into a socket deadline sets its own.
func (runDeadline) Deadline() (time.Time, bool) { return time.Time{}, false }

// RunTimeout is context.WithTimeout on the run clock: the context ends (Err:
// context.DeadlineExceeded) once this process has run for d since the call,
// time it spent stopped left out, or when parent ends or cancel is called.
func RunTimeout(parent context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(parent)
	r := &runTimer{d: d, start: theRunClock.acquire(), cancel: cancel, ctx: ctx}
	r.mu.Lock()
	r.t = time.AfterFunc(d, r.check)
	r.mu.Unlock()
	return runDeadline{ctx}, r.stop
}

// runTimer ends a RunTimeout's context when its run time is up. It holds
// the run clock until it is stopped, or finds the context ended by its
// parent (at its next check: a parent's end is rare, and watching for it
// would cost every wait a goroutine).
type runTimer struct {
	d      time.Duration
	start  time.Duration // on the run clock
	cancel context.CancelCauseFunc
	ctx    context.Context

	mu   sync.Mutex
	t    *time.Timer
	done bool // the clock is released
}

func (r *runTimer) check() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.done {
		return
	}
	if left := r.d - (theRunClock.now() - r.start); left > 0 && r.ctx.Err() == nil {
		r.t.Reset(left) // the process was stopped meanwhile
		return
	}
	r.cancel(context.DeadlineExceeded) // a no-op if the parent ended it
	r.release()
}

func (r *runTimer) stop() {
	r.mu.Lock()
	if !r.done {
		r.t.Stop()
		r.release()
	}
	r.mu.Unlock()
	r.cancel(context.Canceled)
}

// release gives the run clock back, once (r.mu held).
func (r *runTimer) release() {
	r.done = true
	theRunClock.release()
}
