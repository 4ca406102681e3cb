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

// issue runs enqueue (NCCL calls on j.c's stream) on the device thread after
// making the stream wait for the compute queued so far, records j's event
// after it, and hands j to the poller. A failure fails j; an NCCL failure
// (anything but an invalid argument) also aborts the world, since the
// communicator is then unusable.
func (w *ncclWorld) issue(j *ncclJob, enqueue func() error) {
	c := j.c
	var fatal bool
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
		defer w.putEvent(after)
		if err := w.api.EventRecord(after, w.compute); err != nil {
			return err
		}
		if err := w.api.StreamWaitEvent(c.stream, after); err != nil {
			return err
		}
		err = enqueue()
		if cbits.IsNCCLInProgress(err) {
			err = w.settle(c)
		}
		if err != nil {
			fatal = !isInvalidArgument(err)
			return err
		}
		if j.ev, err = w.event(); err != nil {
			return err
		}
		return w.api.EventRecord(j.ev, c.stream)
	})
	if err != nil {
		if fatal {
			w.abort(fmt.Errorf("%w by rank %d: %w", ErrAborted, w.rank, err))
		}
		j.complete(err)
		return
	}
	w.mu.Lock()
	w.pending = append(w.pending, j)
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

// settle waits, on the device thread, until a non-blocking call that
// returned ncclInProgress has been enqueued (NCCL sets connections up
// then), so that the event recorded after it follows it. It gives up after
// the default timeout, or when the world is aborted.
func (w *ncclWorld) settle(c *ncclComm) error {
	deadline := time.Now().Add(w.opts.Timeout)
	for {
		st := w.api.CommGetAsyncError(c.comm)
		if !cbits.IsNCCLInProgress(st) {
			return st
		}
		if err := w.goneErr(); err != nil {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("NCCL still setting up the operation after %v", w.opts.Timeout)
		}
		time.Sleep(20 * time.Microsecond)
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

// ncclTransport lets a Handle of an NCCL communicator cancel its
// operations: NCCL cannot withdraw one, so cancelling aborts the world (the
// job's supervisor then ends the run), and the operation reports why.
type ncclTransport struct{ c *ncclComm }

func (t *ncclTransport) worldRank() int { return t.c.w.rank }
func (t *ncclTransport) worldSize() int { return t.c.w.size }
func (t *ncclTransport) polls() bool    { return false }
func (t *ncclTransport) post(o *op)     { o.finish(fmt.Errorf("nccl: post is not used")) }
func (t *ncclTransport) cancel(o *op, err error) {
	o.cancelErr.Store(&err)
	t.c.w.abort(fmt.Errorf("%w by rank %d: %s: %w", ErrAborted, t.c.w.rank, o.describe(), err))
}
func (t *ncclTransport) abort(err error) { t.c.w.abort(err) }
func (t *ncclTransport) close() error    { return t.c.Close() }
