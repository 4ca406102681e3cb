package collective

import (
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	"github.com/pplaunch/pplaunch/cbits"
)

// ncclJob is one NCCL call or group in flight on a communication stream:
// done when its event is.
type ncclJob struct {
	c        *ncclComm
	ev       cbits.Event
	ops      []*op      // point-to-point: finished one by one
	done     chan error // group operations
	finished atomic.Bool
}

// complete finishes j once with err.
func (j *ncclJob) complete(err error) {
	if !j.finished.CompareAndSwap(false, true) {
		return
	}
	if j.done != nil {
		j.done <- err
		return
	}
	for _, o := range j.ops {
		o.finish(err)
	}
}

// issue queues j's NCCL calls (enqueue, on j.c's stream) after the compute
// queued so far: on the device thread it records an event on the compute
// stream at once, so that later compute is not waited for, and starts j if
// the communicator is free. Where an earlier call is still in progress
// (NCCL's first use of a connection returns ncclInProgress until the peer
// has posted its side), j waits in the communicator's backlog and the
// settler starts it; the device thread is never held meanwhile, so compute
// launches and other communicators go on. A failure fails j; an NCCL
// failure (anything but an invalid argument) also aborts the world, since
// the communicator is then unusable.
func (w *ncclWorld) issue(j *ncclJob, enqueue func() error) {
	c := j.c
	var ready []*ncclJob
	var failed []failedJob
	err := w.dev.Call(func() error {
		if err := w.goneErr(); err != nil {
			return err
		}
		if c.comm == 0 {
			return fmt.Errorf("rank %d: %w", w.rank, ErrClosed)
		}
		after, err := w.event()
		if err != nil {
			return err
		}
		if err := w.api.EventRecord(after, w.compute); err != nil {
			w.putEvent(after)
			return err
		}
		c.backlog = append(c.backlog, queuedCall{j: j, after: after, enqueue: enqueue})
		if c.settling == nil {
			ready, failed = w.drain(c)
		}
		return nil
	})
	if err != nil {
		j.complete(err)
		return
	}
	w.finish(ready, failed)
}

// queuedCall is a job waiting for its communicator, with the event that
// orders it after the compute queued before it was issued.
type queuedCall struct {
	j       *ncclJob
	after   cbits.Event
	enqueue func() error
}

type failedJob struct {
	j     *ncclJob
	err   error
	fatal bool
}

// drain starts c's queued calls in order, on the device thread, until one
// is in progress (it becomes c.settling, and the settler is started) or
// none is left. It returns the jobs whose event is recorded and the jobs
// that failed.
func (w *ncclWorld) drain(c *ncclComm) (ready []*ncclJob, failed []failedJob) {
	for len(c.backlog) > 0 && c.settling == nil {
		q := c.backlog[0]
		c.backlog = c.backlog[1:]
		err := w.api.StreamWaitEvent(c.stream, q.after)
		w.putEvent(q.after) // the wait took the event's state: it may be recorded again
		if err == nil {
			err = q.enqueue()
		}
		if cbits.IsNCCLInProgress(err) {
			c.settling = q.j
			w.settlers.Add(1)
			go w.settle(c)
			break
		}
		if err == nil {
			err = w.record(q.j)
		}
		if err != nil {
			failed = append(failed, failedJob{q.j, err, !isInvalidArgument(err)})
			continue
		}
		ready = append(ready, q.j)
	}
	return ready, failed
}

// record records j's event after its calls on j.c's stream.
func (w *ncclWorld) record(j *ncclJob) (err error) {
	if j.ev, err = w.event(); err != nil {
		return err
	}
	return w.api.EventRecord(j.ev, j.c.stream)
}

// finish hands ready jobs to the poller and fails the failed ones, aborting
// the world on a fatal failure.
func (w *ncclWorld) finish(ready []*ncclJob, failed []failedJob) {
	for _, f := range failed {
		if f.fatal {
			w.abort(fmt.Errorf("%w by rank %d: %w", ErrAborted, w.rank, f.err))
		}
		f.j.complete(f.err)
	}
	if len(ready) == 0 {
		return
	}
	w.mu.Lock()
	w.pending = append(w.pending, ready...)
	start := !w.polling
	w.polling = true
	w.mu.Unlock()
	if start {
		go w.poll()
	}
}

func isInvalidArgument(err error) bool {
	var e *cbits.CUDAError
	return asCUDAError(err, &e) && e.Lib == "NCCL" && e.Code == 4
}

// settle polls c while its call c.settling is in progress (NCCL is setting
// up connections, and the peer may not have posted its side yet), each poll
// a short call on the device thread, then records the call's event and
// starts the backlog. It never gives up by itself: every wait for a call
// has a deadline (the handle's, or the collective's), which aborts the
// world, and Close ends the communicators; either makes it fail c's queued
// jobs and return at its next poll.
func (w *ncclWorld) settle(c *ncclComm) {
	defer w.settlers.Done()
	pause := pollMin
	for {
		time.Sleep(pause)
		pause = min(2*pause, pollMax)
		var ready, stuck []*ncclJob
		var failed []failedJob
		var stop error
		_ = w.dev.Call(func() error {
			j := c.settling
			switch err := w.goneErr(); {
			case err != nil:
				stop = err
			case c.comm == 0:
				stop = fmt.Errorf("rank %d: %w", w.rank, ErrClosed)
			}
			if stop == nil {
				st := w.api.CommGetAsyncError(c.comm)
				switch {
				case cbits.IsNCCLInProgress(st):
					return nil
				case st != nil:
					stop = fmt.Errorf("%w by rank %d: NCCL failed: %w", ErrAborted, w.rank, st)
				}
			}
			c.settling = nil
			if stop != nil {
				stuck = append(stuck, j)
				for _, q := range c.backlog {
					stuck = append(stuck, q.j)
					w.putEvent(q.after)
				}
				c.backlog = nil
				return nil
			}
			if err := w.record(j); err != nil {
				failed = append(failed, failedJob{j, err, true})
			} else {
				ready = append(ready, j)
			}
			r, f := w.drain(c)
			ready, failed = append(ready, r...), append(failed, f...)
			return nil
		})
		if stop != nil {
			w.abort(stop)
			for _, j := range stuck {
				j.complete(stop)
			}
		}
		w.finish(ready, failed)
		if stop != nil || len(ready)+len(failed) > 0 {
			return // a call still in progress has a settler of its own
		}
	}
}

// event takes a free event or creates one (on the device thread).
func (w *ncclWorld) event() (cbits.Event, error) {
	if n := len(w.events); n > 0 {
		e := w.events[n-1]
		w.events = w.events[:n-1]
		return e, nil
	}
	return w.api.EventCreate()
}

func (w *ncclWorld) putEvent(e cbits.Event) { w.events = append(w.events, e) }

// Polling pauses: short while jobs finish, growing to pollMax while none do.
const (
	pollMin = 20 * time.Microsecond
	pollMax = time.Millisecond
)

// poll runs while jobs are pending: it queries their events and the
// communicators' asynchronous state on the device thread, completes the
// finished jobs, and aborts the world on an NCCL failure.
func (w *ncclWorld) poll() {
	pause := pollMin
	for {
		w.mu.Lock()
		if len(w.pending) == 0 {
			w.polling = false
			w.mu.Unlock()
			return
		}
		jobs := slices.Clone(w.pending)
		w.mu.Unlock()
		done, failed := w.check(jobs)
		if failed != nil {
			w.abort(failed)
			continue
		}
		w.mu.Lock()
		w.pending = slices.DeleteFunc(w.pending, func(j *ncclJob) bool { return slices.Contains(done, j) })
		w.mu.Unlock()
		for _, j := range done {
			j.complete(nil)
		}
		if len(done) > 0 {
			pause = pollMin
		} else {
			pause = min(2*pause, pollMax)
		}
		time.Sleep(pause)
	}
}

// check returns the jobs whose events are done, or the failure that must
// abort the world.
func (w *ncclWorld) check(jobs []*ncclJob) (done []*ncclJob, failed error) {
	err := w.dev.Call(func() error {
		seen := map[*ncclComm]bool{}
		for _, j := range jobs {
			if !seen[j.c] && j.c.comm != 0 {
				seen[j.c] = true
				if st := w.api.CommGetAsyncError(j.c.comm); st != nil && !cbits.IsNCCLInProgress(st) {
					return fmt.Errorf("NCCL failed: %w", st)
				}
			}
			ok, err := w.api.EventQuery(j.ev)
			if err != nil {
				return err
			}
			if ok {
				done = append(done, j)
				w.putEvent(j.ev)
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("%w by rank %d: %w", ErrAborted, w.rank, err)
	}
	return done, nil
}

// abort aborts every communicator of the world once (on the device thread,
// where no other NCCL call runs meanwhile) and fails every pending job with
// err.
func (w *ncclWorld) abort(err error) {
	if !w.gone.CompareAndSwap(nil, &err) {
		return
	}
	w.mu.Lock()
	comms := slices.Clone(w.comms)
	w.mu.Unlock()
	_ = w.dev.Call(func() error {
		for _, c := range comms {
			if c.comm != 0 {
				_ = w.api.CommAbort(c.comm)
				c.comm = 0
			}
		}
		return nil
	})
	w.failPending(err)
}

// failPending fails every pending job with err.
func (w *ncclWorld) failPending(err error) {
	w.mu.Lock()
	jobs := w.pending
	w.pending = nil
	w.mu.Unlock()
	for _, j := range jobs {
		j.complete(err)
	}
}

// ncclCanceller lets a Handle of an NCCL communicator cancel its
// operations: NCCL cannot withdraw one, so cancelling aborts the world (the
// job's supervisor then ends the run), and the operation reports why.
type ncclCanceller struct{ c *ncclComm }

func (t *ncclCanceller) cancel(o *op, err error) {
	o.cancelErr.Store(&err)
	t.c.w.abort(fmt.Errorf("%w by rank %d: %s: %w", ErrAborted, t.c.w.rank, o.describe(), err))
}
