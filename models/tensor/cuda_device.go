package tensor

import (
	"fmt"

	"github.com/pplaunch/pplaunch/cbits"
)

// device runs every CUDA call for one GPU on its thread (a cbits.Thread):
// the CUDA runtime's current device is per thread, and cuBLAS's
// reproducibility holds for one stream. call waits for a closure, enqueue
// does not; the first error of an enqueued closure is reported by the next
// call.
type device struct {
	api    cudaAPI
	id     int
	th     *cbits.Thread
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
	d := &device{api: api, id: id}
	th, err := cbits.StartThread(queueDepth, func() error {
		if err := api.SetDevice(id); err != nil {
			return fmt.Errorf("cuda device %d: %w", id, err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	d.th = th
	err = d.call(func() error {
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

// queueDepth is how many closures may wait for the device thread.
const queueDepth = 256

// call runs f on the device's thread after everything queued before it and
// returns its error, or the error of a queued closure that failed before.
func (d *device) call(f func() error) error { return d.th.Call(f) }

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
func (d *device) enqueue(op string, f func() error) { d.th.Enqueue(op, f) }

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
	d.th.Stop()
}
