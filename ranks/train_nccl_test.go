package ranks

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/pplaunch/pplaunch/ranks/stageloop"

	"github.com/pplaunch/pplaunch/cbits"
	"github.com/pplaunch/pplaunch/cbits/cudaemu"
	"github.com/pplaunch/pplaunch/collective"
	"github.com/pplaunch/pplaunch/collective/ncclfake"
	"github.com/pplaunch/pplaunch/schedules"
	"github.com/pplaunch/pplaunch/store"
)

// These tests train on the CUDA backend over the emulator with the device
// tensors carried by NCCL, here collective/ncclfake moving the emulator's
// device memory: NCCL's pairing by order per peer and its groups, with no
// staging through host memory. Host messages go over the in-memory
// communicator, as over TCP in pplaunch train.

// emuMemory is ncclfake.Memory over the emulator's device memory.
type emuMemory struct {
	c *cbits.CUDALibs
	s cbits.Stream // the fake's copies (used under its lock)
}

func newEmuMemory(t *testing.T) *emuMemory {
	t.Helper()
	c, err := cbits.LoadCUDAFrom(cudaemu.Dir(t))
	if err != nil {
		t.Fatal(err)
	}
	s, err := c.StreamCreate()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.StreamDestroy(s) })
	return &emuMemory{c: c, s: s}
}

func (m *emuMemory) Malloc(n int) (cbits.DevPtr, error) { return m.c.Malloc(n) }
func (m *emuMemory) Free(p cbits.DevPtr) error          { return m.c.Free(p) }
func (m *emuMemory) Await(s cbits.Stream) error         { return m.c.StreamSynchronize(s) }

func (m *emuMemory) Copy(dst, src cbits.DevPtr, n int) error {
	if err := m.c.MemcpyDtoDAsync(dst, src, n, m.s); err != nil {
		return err
	}
	return m.c.StreamSynchronize(m.s)
}

// pinned runs f on n bytes of pinned host memory.
func (m *emuMemory) pinned(n int, f func(p unsafe.Pointer, b []byte) error) error {
	p, err := m.c.MallocHost(n)
	if err != nil {
		return err
	}
	defer m.c.FreeHost(p)
	return f(p, unsafe.Slice((*byte)(p), n))
}

func (m *emuMemory) Read(src cbits.DevPtr, out []byte) error {
	return m.pinned(len(out), func(p unsafe.Pointer, b []byte) error {
		if err := m.c.MemcpyDtoHAsync(p, src, len(b), m.s); err != nil {
			return err
		}
		err := m.c.StreamSynchronize(m.s)
		copy(out, b)
		return err
	})
}

func (m *emuMemory) Write(dst cbits.DevPtr, in []byte) error {
	return m.pinned(len(in), func(p unsafe.Pointer, b []byte) error {
		copy(b, in)
		if err := m.c.MemcpyHtoDAsync(dst, p, len(b), m.s); err != nil {
			return err
		}
		return m.c.StreamSynchronize(m.s)
	})
}

// ncclDevice returns a job hook giving every rank an NCCL communicator (the
// fake over the emulator, also returned) on its CUDA backend as Job.DeviceComm,
// closed when the test ends, then running more (if set).
func ncclDevice(t *testing.T, size int, timeout time.Duration, more func(rank int, failed <-chan struct{}, job *Job)) (*ncclfake.NCCL, func(rank int, failed <-chan struct{}, job *Job)) {
	t.Helper()
	f := ncclfake.New(newEmuMemory(t))
	var mu sync.Mutex
	var comms []collective.Comm
	t.Cleanup(func() {
		for _, c := range comms {
			c.Close()
		}
	})
	return f, func(rank int, failed <-chan struct{}, job *Job) {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		c, err := collective.NewNCCL(ctx, job.Store, rank, size, collective.NCCLOptions{
			Options: collective.Options{Timeout: timeout}, Device: job.Compute.Device(), API: f.Rank(),
		})
		if err != nil {
			t.Errorf("rank %d: %v", rank, err)
			return
		}
		mu.Lock()
		comms = append(comms, c)
		mu.Unlock()
		job.DeviceComm = c
		if more != nil {
			more(rank, failed, job)
		}
	}
}

// TestTrainNCCLSameBits: 1F1B, interleaved and a pp×dp layout (that one
// checking shapes every step) give, with NCCL carrying the device tensors,
// the bits of the same run staging them through host memory and of one
// process: losses, validation loss and the final checkpoint.
func TestTrainNCCLSameBits(t *testing.T) {
	open, _ := cudaRanks(t)
	ref := tiny(t)
	ref.CheckpointDir = t.TempDir()
	var want []StepRecord
	if _, errs := trainInProcessOn(t, ref, open, func(_ int, _ <-chan struct{}, job *Job) {
		job.Report = func(r StepRecord) { want = append(want, r) }
	}); errors.Join(errs...) != nil {
		t.Fatal(errors.Join(errs...))
	}
	for _, tc := range []struct {
		sched           string
		pp, dp, v, zero int
		every           bool
	}{{"1f1b", 2, 1, 0, 0, false}, {"interleaved", 2, 1, 2, 0, false}, {"1f1b", 2, 2, 0, 0, true}, {"1f1b", 2, 2, 0, 1, true}} {
		t.Run(fmt.Sprintf("%s/pp%d/dp%d/zero%d", tc.sched, tc.pp, tc.dp, tc.zero), func(t *testing.T) {
			run := func(nccl bool) ([]StepRecord, string) {
				open, _ := cudaRanks(t)
				cfg := tiny(t)
				cfg.Schedule, cfg.PP, cfg.DP, cfg.Virtual, cfg.CheckTransfers, cfg.Zero = tc.sched, tc.pp, tc.dp, tc.v, tc.every, tc.zero
				cfg.Micro = 4 / tc.dp
				cfg.CheckpointDir = t.TempDir()
				var got []StepRecord
				var f *ncclfake.NCCL
				hook := func(rank int, _ <-chan struct{}, job *Job) {
					if rank == 0 {
						job.Report = func(r StepRecord) { got = append(got, r) }
					}
				}
				if nccl {
					f, hook = ncclDevice(t, tc.pp*tc.dp, cfg.Timeout, hook)
				}
				if _, errs := trainInProcessOn(t, cfg, open, hook); errors.Join(errs...) != nil {
					t.Fatalf("nccl %v: %v", nccl, errors.Join(errs...))
				}
				// Per step and replica: every micro-batch's activation and
				// gradient, the tied embedding both ways; one validation.
				if min := cfg.Steps*cfg.DP*(2*cfg.Micro+2) + 1; f != nil && f.Pairs() < min {
					t.Errorf("nccl moved %d messages, want at least %d", f.Pairs(), min)
				}
				return got, cfg.CheckpointDir
			}
			staged, stagedDir := run(false)
			got, dir := run(true)
			if len(got) != len(want) || len(staged) != len(want) {
				t.Fatalf("%d steps over nccl, %d staged, %d in one process", len(got), len(staged), len(want))
			}
			for i, w := range want {
				g, s := got[i], staged[i]
				if g.Loss != w.Loss || g.Loss != s.Loss || fmt.Sprint(deref(g.ValLoss)) != fmt.Sprint(deref(w.ValLoss)) || fmt.Sprint(deref(g.ValLoss)) != fmt.Sprint(deref(s.ValLoss)) {
					t.Errorf("step %d: nccl loss %v val %v, staged %v val %v, one process %v val %v", i, g.Loss, deref(g.ValLoss), s.Loss, deref(s.ValLoss), w.Loss, deref(w.ValLoss))
				}
			}
			sameParams(t, dir, stagedDir, "staged through host memory")
			sameParams(t, dir, ref.CheckpointDir, "one process on CUDA")
		})
	}
}

// TestTrainNCCLTimeoutNamesPeer: a rank that stops answering makes its
// neighbour's NCCL receive time out with the error the TCP backend gives:
// the action, and the operation naming tag, step, micro-batch and peer.
func TestTrainNCCLTimeoutNamesPeer(t *testing.T) {
	open, _ := cudaRanks(t)
	cfg := tiny(t)
	cfg.PP, cfg.Timeout = 2, 5*time.Second
	_, hook := ncclDevice(t, 2, cfg.Timeout, func(rank int, failed <-chan struct{}, job *Job) {
		if rank != 1 {
			return
		}
		job.Stall = func(step int, a schedules.Action) {
			if step == 0 && a == (schedules.Action{Kind: schedules.F, Stage: 1, Micro: 0}) {
				<-failed
			}
		}
	})
	_, errs := trainInProcessOn(t, cfg, open, hook)
	var ae *stageloop.ActionError
	if !errors.As(errs[0], &ae) {
		t.Fatalf("rank 0: %v, want an action error", errs[0])
	}
	want := "recv gradient chunk=0 step=0 mb=0 from rank 1: timeout after "
	if ae.Step != 0 || ae.Peer != 1 || ae.Action.Kind != schedules.RecvB || !strings.Contains(ae.Error(), want) {
		t.Errorf("rank 0: %v, want RECV_B of step 0 with rank 1 and %q", ae, want)
	}
	if !errors.Is(errs[0], context.DeadlineExceeded) {
		t.Errorf("rank 0: %v is not a deadline", errs[0])
	}
}

// TestTrainNCCLRefusesHostTensors: a device communicator beside a backend
// whose tensors live in host memory is refused before any transfer, saying
// what to use.
func TestTrainNCCLRefusesHostTensors(t *testing.T) {
	f := ncclfake.New(nil)
	api := f.Rank()
	dev := ncclfake.NewDevice(api)
	defer dev.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := collective.NewNCCL(ctx, store.NewMemory(), 0, 1, collective.NCCLOptions{Device: dev, API: api})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, errs := trainInProcess(t, tiny(t), func(_ int, _ <-chan struct{}, job *Job) { job.DeviceComm = c })
	if err := errs[0]; err == nil || !strings.Contains(err.Error(), "host memory (use --device cuda, or --backend tcp)") {
		t.Fatalf("got %v, want the refusal of host tensors", err)
	}
}
