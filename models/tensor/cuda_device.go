package tensor

import (
	"fmt"
	"runtime"
	"sync"
)

// device runs every CUDA call for one GPU on one goroutine locked to its OS
// thread: the CUDA runtime's current device is per thread, and cuBLAS's
// reproducibility holds for one stream. Callers submit closures: call waits for
// the closure, queue does not (launches are asynchronous on the GPU anyway, so
// the caller may prepare the next one meanwhile); the first error of a queued
// closure is reported by the next call.
type device struct {
	api    cudaAPI
	id     int
	work   chan func()
	mu     sync.Mutex
	failed error // the first error of a queued closure
	stream cuStream
	blas   blasHandle
	ws     devPtr // cuBLAS workspace
}

// blasWorkspace is the cuBLAS workspace per handle: 32 MiB, the size
// recommended for Hopper (4 MiB suffices elsewhere).
const blasWorkspace = 32 << 20

// startDevice starts the device's thread, selects the GPU and creates its
// stream and cuBLAS handle.
func startDevice(api cudaAPI, id int, tf32 bool) (*device, error) {
	d := &device{api: api, id: id, work: make(chan func(), queueDepth)}
	started := make(chan error, 1)
	go d.loop(started)
	if err := <-started; err != nil {
		return nil, err
	}
	err := d.call(func() error {
		var err error
		if d.stream, err = api.StreamCreate(); err != nil {
			return err
		}
		if d.blas, err = api.BlasCreate(); err != nil {
			return err
		}
		// cublasSetStream gives the handle back its default workspace, so
		// the stream comes first and the workspace after it.
		if err := api.BlasSetStream(d.blas, d.stream); err != nil {
			return err
		}
		if d.ws, err = api.Malloc(blasWorkspace); err != nil {
			return err
		}
		if err := api.BlasSetWorkspace(d.blas, d.ws, blasWorkspace); err != nil {
			return err
		}
		return api.BlasSetTF32(d.blas, tf32)
	})
	if err != nil {
		d.stop()
		return nil, fmt.Errorf("cuda device %d: %w", id, err)
	}
	return d, nil
}

func (d *device) loop(started chan<- error) {
	runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
	if err := d.api.SetDevice(d.id); err != nil {
		started <- fmt.Errorf("cuda device %d: %w", d.id, err)
		return
	}
	started <- nil
	for f := range d.work {
		f()
	}
}

// queueDepth is how many closures may wait for the device thread.
const queueDepth = 256

// call runs f on the device's thread after everything queued before it and
// returns its error, or the error of a queued closure that failed before.
func (d *device) call(f func() error) error {
	done := make(chan error, 1)
	d.work <- func() { done <- f() }
	err := <-done
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.failed != nil {
		return d.failed
	}
	return err
}

// must runs f, for operations that have no error to return: a failure of the
// GPU or the driver panics with the call that failed.
func (d *device) must(op string, f func() error) {
	if err := d.call(f); err != nil {
		panic(fmt.Sprintf("cuda backend: %s: %v", op, err))
	}
}

// enqueue runs f on the device's thread later, in submission order, for
// operations with no error to return; a failure panics at the next must. f
// must not refer to memory the caller may change after enqueue returns.
func (d *device) enqueue(op string, f func() error) {
	d.work <- func() {
		if err := f(); err != nil {
			d.mu.Lock()
			if d.failed == nil {
				d.failed = fmt.Errorf("%s: %w", op, err)
			}
			d.mu.Unlock()
		}
	}
}

// stop releases the stream and cuBLAS handle and ends the thread.
func (d *device) stop() {
	_ = d.call(func() error {
		if d.blas != 0 {
			_ = d.api.BlasDestroy(d.blas)
		}
		if d.ws != 0 {
			_ = d.api.Free(d.ws)
		}
		if d.stream != 0 {
			_ = d.api.StreamSynchronize(d.stream)
			_ = d.api.StreamDestroy(d.stream)
		}
		return nil
	})
	close(d.work)
}
