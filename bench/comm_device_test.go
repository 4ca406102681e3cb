package bench

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pplaunch/pplaunch/cbits"
	"github.com/pplaunch/pplaunch/collective"
	"github.com/pplaunch/pplaunch/collective/ncclfake"
	"github.com/pplaunch/pplaunch/store"
)

// fakeGPUWorld is n NCCL communicators over the in-process fake, whose
// device memory is host memory behind fake addresses, each rank with its
// DeviceMemory: the device drivers' logic without a GPU.
func fakeGPUWorld(t *testing.T, n int) ([]collective.Comm, []DeviceMemory) {
	t.Helper()
	host := ncclfake.NewHostMemory()
	f := ncclfake.New(host)
	st := store.NewMemory()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, mems, errs := make([]collective.Comm, n), make([]DeviceMemory, n), make([]error, n)
	var wg sync.WaitGroup
	for r := range n {
		api := f.Rank()
		dev := ncclfake.NewDevice(api)
		t.Cleanup(dev.Stop)
		mems[r] = fakeDeviceMemory{host}
		wg.Go(func() {
			cs[r], errs[r] = collective.NewNCCL(ctx, st, r, n, collective.NCCLOptions{Options: collective.Options{Timeout: 20 * time.Second}, Device: dev, API: api})
		})
	}
	wg.Wait()
	for r, err := range errs {
		if err != nil {
			t.Fatalf("rank %d: %v", r, err)
		}
	}
	t.Cleanup(func() {
		for _, c := range cs {
			c.Close()
		}
	})
	return cs, mems
}

// fakeDeviceMemory is DeviceMemory over the fake's memory.
type fakeDeviceMemory struct{ m *ncclfake.HostMemory }

func (d fakeDeviceMemory) Alloc(n int) (uintptr, error) {
	p, err := d.m.Malloc(n)
	return uintptr(p), err
}
func (d fakeDeviceMemory) Upload(dst uintptr, src []byte) error {
	return d.m.Write(cbits.DevPtr(dst), src)
}
func (d fakeDeviceMemory) Download(dst []byte, src uintptr) error {
	return d.m.Read(cbits.DevPtr(src), dst)
}
func (d fakeDeviceMemory) Free(p uintptr) { d.m.Free(cbits.DevPtr(p)) }

// runDevice calls f on every rank of a fake GPU world and returns what rank
// 0 wrote.
func runDevice(t *testing.T, n int, f func(c collective.Comm, mem DeviceMemory, w *bytes.Buffer) error) string {
	t.Helper()
	cs, mems := fakeGPUWorld(t, n)
	outs, errs := make([]bytes.Buffer, n), make([]error, n)
	var wg sync.WaitGroup
	for r := range n {
		wg.Go(func() { errs[r] = f(cs[r], mems[r], &outs[r]) })
	}
	wg.Wait()
	for r, err := range errs {
		if err != nil {
			t.Fatalf("rank %d: %v", r, err)
		}
	}
	return outs[0].String()
}

// TestRunDeviceTables: the device benchmarks over NCCL move device memory,
// count no wrong byte or element, and print nccl-tests' columns, one row
// per size.
func TestRunDeviceTables(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		name string
		run  func(c collective.Comm, mem DeviceMemory, w *bytes.Buffer) error
		head string
	}{
		{"p2p", func(c collective.Comm, mem DeviceMemory, w *bytes.Buffer) error {
			return RunP2P(ctx, c, OnGPU(mem), P2POptions{Min: 8, Max: 64, Iters: 2, Reps: 1}, w)
		}, "p2p (nccl)"},
		{"allreduce", func(c collective.Comm, mem DeviceMemory, w *bytes.Buffer) error {
			return RunAllReduce(ctx, c, OnGPU(mem), AllReduceOptions{Min: 8, Max: 64, Iters: 2, Reps: 1}, w)
		}, "allreduce (nccl)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			out := runDevice(t, 3, c.run)
			lines := strings.Split(strings.TrimSpace(out), "\n")
			if len(lines) != 3+4 || !strings.Contains(lines[0], c.head) || !strings.Contains(lines[2], "busbw(GB/s)") {
				t.Fatalf("table:\n%s", out)
			}
			for i, size := range []string{"8", "16", "32", "64"} {
				f := strings.Fields(lines[3+i])
				if len(f) != 7 || f[0] != size || f[6] != "0" {
					t.Errorf("row %q: want size %s, 0 wrong", lines[3+i], size)
				}
			}
		})
	}
}
