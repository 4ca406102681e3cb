package tensor

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"testing"
	"unsafe"
)

// TestCUDAMultiTensor: SumSquaresAll gives each tensor the bits SumSquares
// gives it (float32 and bfloat16 tensors, empty ones, lengths that take one
// block and many), and AdamWAll the bits of AdamW on each tensor with its
// own scalars, which are the CPU's.
func TestCUDAMultiTensor(t *testing.T) {
	c, cpu := emuCUDA(t), gonumCPU()
	r := rand.New(rand.NewPCG(73, 74))
	lens := []int{1000, 0, 1, 100003, 2048, 5000}
	var ts []*Tensor
	for i, n := range lens {
		dt := Float32
		if i == 4 {
			dt = BFloat16
		}
		ts = append(ts, upAs(c, randTensor(r, n), dt))
	}
	all := c.SumSquaresAll(ts)
	for i, x := range ts {
		if one := c.SumSquares(x); math.Float64bits(all[i]) != math.Float64bits(one) {
			t.Errorf("Σx² of tensor %d (%d values): %v together, %v alone", i, lens[i], all[i], one)
		}
	}
	if got := c.SumSquaresAll(nil); len(got) != 0 {
		t.Errorf("Σx² of no tensors: %v", got)
	}
	var us []AdamWUpdate
	var want [][]float32
	for i, n := range lens {
		w, g, m, v := randTensor(r, n), randTensor(r, n), randTensor(r, n), randTensor(r, n)
		for j := range v.Data {
			v.Data[j] *= v.Data[j]
		}
		h := AdamWStep{Beta1: 0.9, Beta2: 0.95, GradScale: 0.5, Decay: 1 - 1e-4*float32(i), Step: 1e-3 * float32(i+1), InvBC2: 3.2, Eps: 1e-8}
		us = append(us, AdamWUpdate{W: up(c, w), G: up(c, g), M: up(c, m), V: up(c, v), H: h})
		cpu.AdamW(w, g, m, v, h)
		want = append(want, w.Data, m.Data, v.Data)
	}
	c.AdamWAll(us)
	for i, u := range us {
		for j, x := range []*Tensor{u.W, u.M, u.V} {
			check(t, fmt.Sprintf("adamw tensor %d (%d values) output %d", i, lens[i], j), down(c, x), want[3*i+j], 0)
		}
	}
}

// countAPI counts the kernel launches and the copies to the host, with the
// bytes of the largest copy.
type countAPI struct {
	cudaAPI
	mu                       sync.Mutex
	launches, downs, maxDown int
}

func (a *countAPI) Launch(k cuKernel, grid, block [3]uint32, smem int, s cuStream, args ...any) error {
	a.mu.Lock()
	a.launches++
	a.mu.Unlock()
	return a.cudaAPI.Launch(k, grid, block, smem, s, args...)
}

func (a *countAPI) MemcpyDtoHAsync(dst unsafe.Pointer, src devPtr, bytes int, s cuStream) error {
	a.mu.Lock()
	a.downs++
	a.maxDown = max(a.maxDown, bytes)
	a.mu.Unlock()
	return a.cudaAPI.MemcpyDtoHAsync(dst, src, bytes, s)
}

// take waits for c's queued work and returns the counts so far, starting them over.
func (a *countAPI) take(t *testing.T, c *CUDA) (launches, downs, maxDown int) {
	t.Helper()
	if err := c.Sync(); err != nil {
		t.Fatal(err)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	l, d, m := a.launches, a.downs, a.maxDown
	a.launches, a.downs, a.maxDown = 0, 0, 0
	return l, d, m
}

// TestCUDAStepScalarsTrips: the optimizer's update of 150 tensors is one
// launch and no download, all their Σx² two launches and one download of
// their sums, and a cross-entropy's loss one download of one double, what
// ever the row count.
func TestCUDAStepScalarsTrips(t *testing.T) {
	api := &countAPI{cudaAPI: emuCUDA(t).dev.api}
	c, err := newCUDAWith(api, 0, CUDAOptions{KernelCache: "-"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var us []AdamWUpdate
	var gs []*Tensor
	for i := range 150 {
		n := 1 + 37*i
		u := AdamWUpdate{W: c.Zeros(n), G: c.Zeros(n), M: c.Zeros(n), V: c.Zeros(n), H: AdamWStep{Beta1: 0.9, Beta2: 0.95, Eps: 1e-8, Decay: 1, InvBC2: 1}}
		us = append(us, u)
		gs = append(gs, u.G)
	}
	api.take(t, c) // the kernels' loading and the zeros
	c.AdamWAll(us)
	if l, d, _ := api.take(t, c); l != 1 || d != 0 {
		t.Errorf("AdamWAll of %d tensors: %d launches and %d downloads, want 1 and 0", len(us), l, d)
	}
	c.SumSquaresAll(gs)
	if l, d, m := api.take(t, c); l != 2 || d != 1 || m != 8*len(gs) {
		t.Errorf("SumSquaresAll of %d tensors: %d launches, %d downloads (largest %d bytes), want 2, 1 of %d bytes", len(gs), l, d, m, 8*len(gs))
	}
	logits := c.Zeros(300, 37)
	c.CrossEntropy(logits, logits, make([]int32, 300), 0)
	if l, d, m := api.take(t, c); l != 2 || d != 1 || m != 8 {
		t.Errorf("cross entropy of 300 rows: %d launches, %d downloads (largest %d bytes), want 2, 1 of 8 bytes", l, d, m)
	}
}
