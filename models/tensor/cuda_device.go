package tensor

import (
	"fmt"
	"runtime"
)

// device runs every CUDA call for one GPU on one goroutine locked to its OS
// thread: the CUDA runtime's current device is per thread, and cuBLAS's
// reproducibility holds for one stream. Callers submit closures and wait.
type device struct {
	api    cudaAPI
	id     int
	work   chan func()
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
	d := &device{api: api, id: id, work: make(chan func())}
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
		if d.ws, err = api.Malloc(blasWorkspace); err != nil {
			return err
		}
		if err := api.BlasSetWorkspace(d.blas, d.ws, blasWorkspace); err != nil {
			return err
		}
		if err := api.BlasSetStream(d.blas, d.stream); err != nil {
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

// call runs f on the device's thread and returns its error.
func (d *device) call(f func() error) error {
	done := make(chan error, 1)
	d.work <- func() { done <- f() }
	return <-done
}

// must is call for operations that have no error to return: a failure of the
// GPU or the driver panics with the call that failed.
func (d *device) must(op string, f func() error) {
	if err := d.call(f); err != nil {
		panic(fmt.Sprintf("cuda backend: %s: %v", op, err))
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
