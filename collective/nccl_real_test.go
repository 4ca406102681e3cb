package collective

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/pplaunch/pplaunch/cbits"
	"github.com/pplaunch/pplaunch/store"
)

// The NCCL backend on a real GPU (bench/gpu/check.sh runs these): each skips
// with the reason where there is no GPU or no NCCL.

func realGPU(t *testing.T) (*cbits.CUDALibs, *cbits.NCCLLib) {
	t.Helper()
	c, err := cbits.LoadCUDA()
	if err != nil {
		t.Skipf("no CUDA libraries: %v", err)
	}
	if n, err := c.DeviceCount(); err != nil || n == 0 {
		t.Skipf("no GPU: %v", err)
	}
	n, err := cbits.LoadNCCL()
	if err != nil {
		t.Skipf("no NCCL: %v", err)
	}
	return c, n
}

// realRank is one rank on GPU 0 with its device thread.
type realRank struct {
	c   *cbits.CUDALibs
	dev interface {
		DeviceThread
		Stop()
	}
	comm Comm
}

func (r *realRank) upload(t *testing.T, v []float32) Buffer {
	t.Helper()
	var p cbits.DevPtr
	err := r.dev.Call(func() (err error) {
		if p, err = r.c.Malloc(4 * len(v)); err != nil {
			return err
		}
		s := cbits.Stream(r.dev.ComputeStream())
		if err := r.c.MemcpyHtoDAsync(p, unsafe.Pointer(&v[0]), 4*len(v), s); err != nil {
			return err
		}
		return r.c.StreamSynchronize(s)
	})
	if err != nil {
		t.Error(err) // not Fatal: ranks call this from their goroutines
	}
	return OnDevice(Float32, uintptr(p), len(v))
}

func (r *realRank) download(t *testing.T, b Buffer) []float32 {
	t.Helper()
	v := make([]float32, b.Len())
	err := r.dev.Call(func() error {
		s := cbits.Stream(r.dev.ComputeStream())
		if err := r.c.MemcpyDtoHAsync(unsafe.Pointer(&v[0]), cbits.DevPtr(b.Device.Ptr), 4*len(v), s); err != nil {
			return err
		}
		return r.c.StreamSynchronize(s)
	})
	if err != nil {
		t.Error(err)
	}
	return v
}

// realWorld starts n goroutine ranks sharing GPU 0; NCCL's refusal (several
// ranks per GPU needs NCCL 2.30 and NCCL_MULTI_RANK_GPU_ENABLE=1) skips,
// saying why.
func realWorld(t *testing.T, n int) []*realRank {
	c, nl := realGPU(t)
	if n > 1 && (nl.Version() < 23000 || os.Getenv("NCCL_MULTI_RANK_GPU_ENABLE") != "1") {
		t.Skipf("%d ranks on one GPU need NCCL 2.30+ (have %s) and NCCL_MULTI_RANK_GPU_ENABLE=1", n, nl.VersionString())
	}
	st := store.NewMemory()
	rs := make([]*realRank, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		dev, err := NewDeviceThread(c, 0)
		if err != nil {
			t.Fatal(err)
		}
		rs[i] = &realRank{c: c, dev: dev}
		t.Cleanup(dev.Stop)
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			rs[i].comm, errs[i] = NewNCCL(ctx, st, i, n, NCCLOptions{Options: Options{Timeout: 30 * time.Second}, Device: dev, CUDA: c, NCCL: nl})
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		var ce *cbits.CUDAError
		if errors.As(err, &ce) && ce.Code == cbits.NCCLInvalidUsage {
			t.Skipf("NCCL refuses %d ranks on one GPU: %v", n, err)
		}
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, r := range rs {
			r.comm.Close()
		}
	})
	return rs
}

// TestRealNCCLOneRank: a one-rank communicator all-reduces, broadcasts and
// sends to itself in one group.
func TestRealNCCLOneRank(t *testing.T) {
	r := realWorld(t, 1)[0]
	ctx := testCtx(t)
	b := r.upload(t, []float32{1, 2, 3})
	if err := r.comm.AllReduce(ctx, b, Avg); err != nil {
		t.Fatal(err)
	}
	if got := r.download(t, b); !slices.Equal(got, []float32{1, 2, 3}) {
		t.Errorf("all-reduce of one rank: %v", got)
	}
	dst := r.upload(t, []float32{0, 0, 0})
	if err := r.comm.Batch(SendOp(0, Tag{Kind: Data}, b), RecvOp(0, Tag{Kind: Data}, dst)).Wait(ctx); err != nil {
		t.Fatal(err)
	}
	if got := r.download(t, dst); !slices.Equal(got, []float32{1, 2, 3}) {
		t.Errorf("self send/recv: %v", got)
	}
	if err := r.comm.Barrier(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestRealNCCLShared: 2 and 4 ranks on one GPU: a pipeline's activations
// forward and gradients back (one Batch per neighbour), and an all-reduce.
func TestRealNCCLShared(t *testing.T) {
	for _, n := range []int{2, 4} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			rs := realWorld(t, n)
			ctx := testCtx(t)
			var wg sync.WaitGroup
			errs := make([]error, n)
			got := make([][]float32, n)
			for i, r := range rs {
				wg.Go(func() {
					act := r.upload(t, []float32{float32(i), 1})
					in := r.upload(t, []float32{-1, -1})
					var ops []Op
					if i > 0 {
						ops = append(ops, RecvOp(i-1, Tag{Kind: Activation, Chunk: uint16(i)}, in))
					}
					if i < n-1 {
						ops = append(ops, SendOp(i+1, Tag{Kind: Activation, Chunk: uint16(i + 1)}, act))
					}
					if errs[i] = r.comm.Batch(ops...).Wait(ctx); errs[i] != nil {
						return
					}
					got[i] = r.download(t, in)
					sum := r.upload(t, []float32{float32(i + 1)})
					if errs[i] = r.comm.AllReduce(ctx, sum, Sum); errs[i] == nil {
						got[i] = append(got[i], r.download(t, sum)...)
					}
				})
			}
			wg.Wait()
			if err := errors.Join(errs...); err != nil {
				t.Fatal(err)
			}
			for i := range n {
				want := []float32{float32(i - 1), 1, float32(n * (n + 1) / 2)}
				if i == 0 {
					want[0], want[1] = -1, -1
				}
				if !slices.Equal(got[i], want) {
					t.Errorf("rank %d: %v, want %v", i, got[i], want)
				}
			}
		})
	}
}
