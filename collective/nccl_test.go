package collective

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pplaunch/pplaunch/cbits"
	"github.com/pplaunch/pplaunch/collective/ncclfake"
	"github.com/pplaunch/pplaunch/store"
)

// These tests run the NCCL backend's logic (unique id through the store,
// polling set-up, groups, events, deadlines, aborts, error names) over the
// in-process fake of collective/ncclfake. The real libraries on a GPU are
// checked by bench/gpu/check.sh.

type fakeWorld struct {
	f     *ncclfake.NCCL
	comms []Comm
	devs  []*ncclfake.Device
}

func newFakeWorld(t *testing.T, n int, timeout time.Duration) *fakeWorld {
	t.Helper()
	f := ncclfake.New(nil)
	st := store.NewMemory()
	w := &fakeWorld{f: f, comms: make([]Comm, n), devs: make([]*ncclfake.Device, n)}
	errs := make([]error, n)
	var wg sync.WaitGroup
	for r := range n {
		api := f.Rank()
		dev := ncclfake.NewDevice(api)
		w.devs[r] = dev
		t.Cleanup(dev.Stop)
		wg.Go(func() {
			w.comms[r], errs[r] = NewNCCL(testCtx(t), st, r, n, NCCLOptions{Options: Options{Timeout: timeout}, Device: dev, API: api})
		})
	}
	wg.Wait()
	for r, err := range errs {
		if err != nil {
			t.Fatalf("rank %d: %v", r, err)
		}
	}
	t.Cleanup(func() {
		for _, c := range w.comms {
			c.Close()
		}
	})
	return w
}

func (w *fakeWorld) dev(v ...float32) Buffer {
	return OnDevice(Float32, uintptr(w.f.Upload(v)), len(v))
}

func (w *fakeWorld) read(b Buffer) []float32 {
	return w.f.Download(cbits.DevPtr(b.Device.Ptr), b.Len())
}

// TestNCCLPointToPoint: a send and a receive, then the 1F1B steady state as
// one Batch per rank (a send and a receive with the same peer), move the
// device data.
func TestNCCLPointToPoint(t *testing.T) {
	w := newFakeWorld(t, 2, 10*time.Second)
	ctx := testCtx(t)
	tag := Tag{Kind: Activation, Chunk: 1, Step: 3, MicroBatch: 5}
	src, dst := w.dev(1, 2, 3), w.dev(0, 0, 0)
	h := w.comms[1].Irecv(0, tag, dst)
	if err := w.comms[0].Send(ctx, 1, tag, src); err != nil {
		t.Fatal(err)
	}
	if err := h.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	if got := w.read(dst); !slices.Equal(got, []float32{1, 2, 3}) {
		t.Fatalf("received %v", got)
	}
	a, g := w.dev(7, 8), w.dev(9)
	ra, rg := w.dev(0, 0), w.dev(0)
	gt := Tag{Kind: Gradient, Step: 3, MicroBatch: 4}
	h0 := w.comms[0].Batch(SendOp(1, tag, a), RecvOp(1, gt, rg))
	h1 := w.comms[1].Batch(SendOp(0, gt, g), RecvOp(0, tag, ra))
	if err := errors.Join(h0.Wait(ctx), h1.Wait(ctx)); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(w.read(ra), []float32{7, 8}) || !slices.Equal(w.read(rg), []float32{9}) {
		t.Fatalf("batch received %v and %v", w.read(ra), w.read(rg))
	}
}

// TestNCCLFirstUseLeavesDeviceFree: NCCL's first use of a connection stays
// in progress until the peer posts its side. Meanwhile the rank's device
// thread is free: a compute launch (any call there) runs before the peer
// has posted, and a second send queued behind the first goes out after it.
// Were the device thread held until the peer posts, this test, which posts
// the peer's side only after that launch, could not pass.
func TestNCCLFirstUseLeavesDeviceFree(t *testing.T) {
	w := newFakeWorld(t, 2, 10*time.Second)
	ctx := testCtx(t)
	before := w.f.InProgress()
	tag := Tag{Kind: Activation, Step: 1}
	s1 := w.comms[0].Isend(1, tag, w.dev(1, 2))
	tag.MicroBatch = 1
	s2 := w.comms[0].Isend(1, tag, w.dev(3))
	launched := false
	if err := w.devs[0].Call(func() error { launched = true; return nil }); err != nil || !launched {
		t.Fatalf("a launch on rank 0's device thread while its first send is in progress: %v", err)
	}
	if w.f.InProgress() != before+1 {
		t.Fatalf("the fake returned ncclInProgress %d times for the first send, want once", w.f.InProgress()-before)
	}
	r1, r2 := w.dev(0, 0), w.dev(0)
	if err := errors.Join(w.comms[1].Recv(ctx, 0, Tag{Kind: Activation, Step: 1}, r1), w.comms[1].Recv(ctx, 0, tag, r2),
		s1.Wait(ctx), s2.Wait(ctx)); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(w.read(r1), []float32{1, 2}) || !slices.Equal(w.read(r2), []float32{3}) {
		t.Fatalf("received %v and %v, want [1 2] and [3] in order", w.read(r1), w.read(r2))
	}
	// The connection is up: using it again is not in progress.
	n := w.f.InProgress()
	h := w.comms[0].Isend(1, tag, w.dev(4))
	if err := errors.Join(w.comms[1].Recv(ctx, 0, tag, r2), h.Wait(ctx)); err != nil || w.f.InProgress() != n {
		t.Fatalf("second use of the connection: %v, %d more in-progress answers", err, w.f.InProgress()-n)
	}
}

// TestNCCLFacingSendsTimeOut: two sends facing each other, issued singly,
// block their streams on NCCL (and on the fake). The deadline fires, the
// world is aborted and the error names the operation, peer, step and
// micro-batch as the TCP backend's does.
func TestNCCLFacingSendsTimeOut(t *testing.T) {
	w := newFakeWorld(t, 2, 10*time.Second)
	tag := Tag{Kind: Activation, Chunk: 2, Step: 3, MicroBatch: 5}
	gt := Tag{Kind: Gradient, Chunk: 1, Step: 3, MicroBatch: 4}
	s0 := w.comms[0].Isend(1, tag, w.dev(1))
	_ = w.comms[0].Irecv(1, gt, w.dev(0))
	s1 := w.comms[1].Isend(0, gt, w.dev(2))
	r1 := w.comms[1].Irecv(0, tag, w.dev(0))
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	err := r1.Wait(ctx)
	want := "recv activation chunk=2 step=3 mb=5 from rank 0: timeout after "
	if err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Fatalf("got %v, want %q...", err, want)
	}
	// rank 1's other operation fails at once: its world is aborted.
	if err := s1.Wait(context.Background()); err == nil || !errors.Is(err, ErrAborted) || !strings.Contains(err.Error(), want) {
		t.Errorf("rank 1's send: %v, want the abort naming the timed-out receive", err)
	}
	ctx2, cancel2 := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel2()
	if err := s0.Wait(ctx2); err == nil || !strings.HasPrefix(err.Error(), "send activation chunk=2 step=3 mb=5 to rank 1: timeout after") {
		t.Errorf("rank 0's send: %v", err)
	}
}

// TestNCCLDefaultTimeout: with no deadline on the context, the
// communicator's own timeout bounds a receive from a peer that never sends.
func TestNCCLDefaultTimeout(t *testing.T) {
	w := newFakeWorld(t, 2, 30*time.Millisecond)
	err := w.comms[0].Recv(context.Background(), 1, Tag{Kind: Gradient, Step: 1, MicroBatch: 2}, w.dev(0))
	if err == nil || !strings.HasPrefix(err.Error(), "recv gradient chunk=0 step=1 mb=2 from rank 1: timeout after 30ms") {
		t.Fatalf("got %v", err)
	}
}

// TestNCCLAsyncError: an asynchronous NCCL failure (a peer's connection
// broke) fails the pending operations, naming them and NCCL's result.
func TestNCCLAsyncError(t *testing.T) {
	w := newFakeWorld(t, 2, 10*time.Second)
	h := w.comms[0].Irecv(1, Tag{Kind: Activation, Chunk: 1, Step: 7, MicroBatch: 1}, w.dev(0))
	w.f.FailAll(&cbits.CUDAError{Lib: "NCCL", Call: "communicator state", Code: cbits.NCCLRemoteError, Name: "ncclRemoteError", Message: "remote process exited or there was a network error"})
	err := h.Wait(testCtx(t))
	for _, want := range []string{"recv activation chunk=1 step=7 mb=1 from rank 1", "NCCL failed: communicator state: ncclRemoteError (6)"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("got %v, want it to contain %q", err, want)
		}
	}
}

// TestNCCLPeerAborted: a peer that aborts (as a killed rank stops taking
// part) leaves this rank's receive to its deadline, which names the peer.
func TestNCCLPeerAborted(t *testing.T) {
	w := newFakeWorld(t, 2, 10*time.Second)
	w.comms[1].Abort(errors.New("killed"))
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Millisecond)
	defer cancel()
	err := w.comms[0].Recv(ctx, 1, Tag{Kind: Activation, Chunk: 1, Step: 2, MicroBatch: 0}, w.dev(0))
	if err == nil || !strings.HasPrefix(err.Error(), "recv activation chunk=1 step=2 mb=0 from rank 1: timeout after") {
		t.Fatalf("got %v", err)
	}
	if err := w.comms[1].Send(context.Background(), 0, Tag{}, w.dev(1)); err == nil || !strings.Contains(err.Error(), "killed") {
		t.Errorf("the aborted rank's next send: %v", err)
	}
}

// TestNCCLCollectives: all-reduce (sum, avg, max), broadcast and barrier on
// three ranks.
func TestNCCLCollectives(t *testing.T) {
	w := newFakeWorld(t, 3, 10*time.Second)
	for _, c := range []struct {
		op   ReduceOp
		want []float32
	}{{Sum, []float32{6, -3}}, {Avg, []float32{2, -1}}, {Max, []float32{3, 0}}} {
		bufs := []Buffer{w.dev(1, 0), w.dev(2, -1), w.dev(3, -2)}
		eachRank(t, w.comms, func(cm Comm) error { return cm.AllReduce(testCtx(t), bufs[cm.Rank()], c.op) })
		for r, b := range bufs {
			if got := w.read(b); !slices.Equal(got, c.want) {
				t.Errorf("%v: rank %d has %v, want %v", c.op, r, got, c.want)
			}
		}
	}
	bufs := []Buffer{w.dev(0), w.dev(5), w.dev(0)}
	eachRank(t, w.comms, func(cm Comm) error { return cm.Broadcast(testCtx(t), bufs[cm.Rank()], 1) })
	for r, b := range bufs {
		if got := w.read(b); got[0] != 5 {
			t.Errorf("broadcast: rank %d has %v", r, got)
		}
	}
	eachRank(t, w.comms, func(cm Comm) error { return cm.Barrier(testCtx(t)) })
}

// TestNCCLCollectiveTimeout: an all-reduce that one rank never joins times
// out, names the call, and aborts the world.
func TestNCCLCollectiveTimeout(t *testing.T) {
	w := newFakeWorld(t, 2, 10*time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	err := w.comms[0].AllReduce(ctx, w.dev(1, 2), Sum)
	if err == nil || !strings.HasPrefix(err.Error(), "rank 0: all-reduce call=1 (float32[2], sum): timeout after") {
		t.Fatalf("got %v", err)
	}
	if err := w.comms[0].Barrier(context.Background()); !errors.Is(err, ErrAborted) {
		t.Errorf("after the abort: %v", err)
	}
}

// TestNCCLGroups: a reordering of all ranks (ncclCommSplit) and a subset
// (its own communicator from an id in the store) both reduce among their
// members only, with ranks numbered in list order.
func TestNCCLGroups(t *testing.T) {
	w := newFakeWorld(t, 3, 10*time.Second)
	groups := make([]Comm, 3)
	eachRank(t, w.comms, func(c Comm) (err error) { groups[c.Rank()], err = c.Group([]int{2, 0, 1}); return err })
	if groups[2].Rank() != 0 || groups[0].Rank() != 1 || groups[0].WorldRank(0) != 2 {
		t.Fatalf("reordered group ranks: %d %d", groups[2].Rank(), groups[0].Rank())
	}
	bufs := []Buffer{w.dev(1), w.dev(2), w.dev(4)}
	eachRank(t, w.comms, func(c Comm) error { return groups[c.Rank()].AllReduce(testCtx(t), bufs[c.Rank()], Sum) })
	if got := w.read(bufs[1]); got[0] != 7 {
		t.Errorf("split group sum %v", got)
	}
	sub := make([]Comm, 3)
	eachRank(t, []Comm{w.comms[0], w.comms[2]}, func(c Comm) (err error) { sub[c.Rank()], err = c.Group([]int{0, 2}); return err })
	bufs = []Buffer{w.dev(1), w.dev(100), w.dev(4)}
	eachRank(t, []Comm{w.comms[0], w.comms[2]}, func(c Comm) error { return sub[c.Rank()].AllReduce(testCtx(t), bufs[c.Rank()], Sum) })
	if got := w.read(bufs[2]); got[0] != 5 {
		t.Errorf("subset group sum %v, want 5", got)
	}
	if _, err := w.comms[1].Group([]int{0, 2}); err == nil || !strings.Contains(err.Error(), "does not include this rank") {
		t.Errorf("group without this rank: %v", err)
	}
}

// TestNCCLBufferKinds: the NCCL backend refuses host buffers, and the host
// backends refuse device buffers, each saying what to do.
func TestNCCLBufferKinds(t *testing.T) {
	w := newFakeWorld(t, 2, time.Second)
	err := w.comms[0].Isend(1, Tag{}, F32([]float32{1})).Wait(testCtx(t))
	if err == nil || !strings.Contains(err.Error(), "the nccl backend moves device memory only") {
		t.Errorf("host buffer on nccl: %v", err)
	}
	if err := w.comms[0].AllReduce(testCtx(t), F32([]float32{1}), Sum); err == nil || !strings.Contains(err.Error(), "device memory only") {
		t.Errorf("host all-reduce on nccl: %v", err)
	}
	forEach(t, []int{2}, func(t *testing.T, b backend, n int) {
		cs := b.world(t, n, Options{})
		d := OnDevice(Float32, 0x1000, 4)
		if err := cs[0].Isend(1, Tag{}, d).Wait(testCtx(t)); err == nil || !strings.Contains(err.Error(), "device memory, which this backend cannot reach") {
			t.Errorf("device send: %v", err)
		}
		if err := cs[0].AllReduce(testCtx(t), d, Sum); err == nil || !strings.Contains(err.Error(), "device memory") {
			t.Errorf("device all-reduce: %v", err)
		}
	})
}

// TestMovesDevice: only NCCL communicators (and their groups) take device
// buffers as they are.
func TestMovesDevice(t *testing.T) {
	w := newFakeWorld(t, 1, time.Second)
	g, err := w.comms[0].Group([]int{0})
	if err != nil {
		t.Fatal(err)
	}
	if !w.comms[0].MovesDevice() || !g.MovesDevice() || memoryWorld(t, 1, Options{})[0].MovesDevice() {
		t.Error("MovesDevice is wrong")
	}
}

// TestNCCLNeedsDevice: NewNCCL without a device thread says so.
func TestNCCLNeedsDevice(t *testing.T) {
	_, err := NewNCCL(testCtx(t), store.NewMemory(), 0, 1, NCCLOptions{})
	if err == nil || !strings.Contains(err.Error(), "device thread") {
		t.Fatalf("got %v", err)
	}
}
