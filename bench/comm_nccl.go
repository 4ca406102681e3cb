package bench

import (
	"context"
	"fmt"
	"time"
	"unsafe"

	"github.com/pplaunch/pplaunch/cbits"
	"github.com/pplaunch/pplaunch/collective"
	"github.com/pplaunch/pplaunch/ranks"
)

// NCCLJob is a rank job over the NCCL communicator for a device benchmark:
// the rank's GPU is LOCAL_RANK modulo the visible GPUs, driven from a
// device thread of its own, and f gets its memory; the unique id travels
// through the job's store.
func NCCLJob(timeout time.Duration, f func(ctx context.Context, comm collective.Comm, mem DeviceMemory) error) func(ctx context.Context, r *ranks.Rank) error {
	return func(ctx context.Context, r *ranks.Rank) error {
		if timeout <= 0 {
			return fmt.Errorf("--timeout %v: must be positive", timeout)
		}
		cuda, err := cbits.LoadCUDA()
		if err != nil {
			return fmt.Errorf("rank %d: %w", r.Rank, err)
		}
		n, err := cuda.DeviceCount()
		if err != nil || n == 0 {
			return fmt.Errorf("rank %d: no GPU: %v", r.Rank, err)
		}
		dev, err := collective.NewDeviceThread(cuda, r.LocalRank%n)
		if err != nil {
			return fmt.Errorf("rank %d: %w", r.Rank, err)
		}
		defer dev.Stop()
		comm, err := collective.NewNCCL(ctx, r.Store, r.Rank, r.WorldSize, collective.NCCLOptions{Options: collective.Options{Timeout: timeout}, Device: dev, CUDA: cuda})
		if err != nil {
			return err
		}
		defer comm.Close()
		return f(ctx, comm, &deviceMemory{c: cuda, dev: dev})
	}
}

// deviceMemory is DeviceMemory on a device thread.
type deviceMemory struct {
	c   *cbits.CUDALibs
	dev collective.DeviceThread
}

func (m *deviceMemory) Alloc(bytes int) (p uintptr, err error) {
	err = m.dev.Call(func() error {
		d, err := m.c.Malloc(bytes)
		p = uintptr(d)
		return err
	})
	return p, err
}

func (m *deviceMemory) Upload(dst uintptr, src []byte) error {
	if len(src) == 0 {
		return nil
	}
	return m.dev.Call(func() error {
		s := cbits.Stream(m.dev.ComputeStream())
		if err := m.c.MemcpyHtoDAsync(cbits.DevPtr(dst), unsafe.Pointer(&src[0]), len(src), s); err != nil {
			return err
		}
		return m.c.StreamSynchronize(s)
	})
}

func (m *deviceMemory) Download(dst []byte, src uintptr) error {
	if len(dst) == 0 {
		return nil
	}
	return m.dev.Call(func() error {
		s := cbits.Stream(m.dev.ComputeStream())
		if err := m.c.MemcpyDtoHAsync(unsafe.Pointer(&dst[0]), cbits.DevPtr(src), len(dst), s); err != nil {
			return err
		}
		return m.c.StreamSynchronize(s)
	})
}

func (m *deviceMemory) Free(p uintptr) {
	_ = m.dev.Call(func() error { return m.c.Free(cbits.DevPtr(p)) })
}
