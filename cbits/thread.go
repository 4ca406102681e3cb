package cbits

import (
	"fmt"
	"runtime"
	"sync"
)

// Thread runs closures, in the order they are submitted, on one goroutine
// locked to its OS thread: the thread that owns a GPU, since the CUDA
// runtime's current device is per thread and the binding does not lock.
// Call waits for its closure; Enqueue does not (GPU launches are
// asynchronous anyway, so the caller may prepare the next one meanwhile),
// and the first error of an enqueued closure is reported by every later
// Call. The CUDA tensor backend and NCCL's bare device threads are Threads.
type Thread struct {
	work   chan func()
	mu     sync.Mutex
	failed error // the first error of an enqueued closure
}

// StartThread starts a thread whose queue holds depth closures (0: each
// submission waits for the thread), and runs init on it first: init's error
// ends the thread and is returned.
func StartThread(depth int, init func() error) (*Thread, error) {
	t := &Thread{work: make(chan func(), depth)}
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
		err := init()
		started <- err
		if err != nil {
			return
		}
		for f := range t.work {
			f()
		}
	}()
	if err := <-started; err != nil {
		return nil, err
	}
	return t, nil
}

// Call runs f on the thread after everything submitted before it and
// returns its error, or the error of an enqueued closure that failed before.
func (t *Thread) Call(f func() error) error {
	done := make(chan error, 1)
	t.work <- func() { done <- f() }
	err := <-done
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.failed != nil {
		return t.failed
	}
	return err
}

// Enqueue runs f on the thread later, in submission order; its error, named
// by op, is kept for the next Call. f must not refer to memory the caller
// may change after Enqueue returns.
func (t *Thread) Enqueue(op string, f func() error) {
	t.work <- func() {
		if err := f(); err != nil {
			t.mu.Lock()
			if t.failed == nil {
				t.failed = fmt.Errorf("%s: %w", op, err)
			}
			t.mu.Unlock()
		}
	}
}

// Stop ends the thread once what was submitted has run; nothing may be
// submitted after it.
func (t *Thread) Stop() { close(t.work) }
