package ranks

import (
	"errors"
	"fmt"
	"math"
	"sync"
	"testing"

	"github.com/pplaunch/pplaunch/cbits/cudaemu"
	"github.com/pplaunch/pplaunch/models/tensor"
)

// These tests train on the CUDA backend over the emulator (cbits/cudaemu),
// one backend per rank as on a GPU that several ranks share, so that the
// transfers go through pinned host buffers and the copy stream.

// cudaRanks returns a function opening one emulated CUDA backend per rank,
// closed when the test ends, and the backends opened so far.
func cudaRanks(t *testing.T) (func(rank int) tensor.Backend, func() []*tensor.CUDA) {
	t.Helper()
	dir, cache := cudaemu.Dir(t), t.TempDir()
	var mu sync.Mutex
	var opened []*tensor.CUDA
	t.Cleanup(func() {
		for _, c := range opened {
			c.Close()
		}
	})
	return func(int) tensor.Backend {
			c, err := tensor.NewCUDAFrom([]string{dir}, 0, tensor.CUDAOptions{KernelCache: cache})
			if err != nil {
				t.Fatal(err)
			}
			mu.Lock()
			opened = append(opened, c)
			mu.Unlock()
			return c
		}, func() []*tensor.CUDA {
			mu.Lock()
			defer mu.Unlock()
			return append([]*tensor.CUDA(nil), opened...)
		}
}

// TestTrainCUDAMatchesOneProcess: on the CUDA backend, pipelines (1F1B,
// zero-bubble, interleaved, with data parallelism) give the bits of one
// process on CUDA: losses, validation loss and the checkpoint; the one
// process's losses are within 1e-4 of the CPU backend's.
func TestTrainCUDAMatchesOneProcess(t *testing.T) {
	open, _ := cudaRanks(t)
	ref := tiny(t)
	ref.Micro = 4
	ref.CheckpointDir = t.TempDir()
	var want []StepRecord
	res, errs := trainInProcessOn(t, ref, open, func(rank int, _ <-chan struct{}, job *Job) {
		job.Report = func(r StepRecord) { want = append(want, r) }
	})
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	if len(res.Summary.PeakDevice) != 1 || res.Summary.PeakDevice[0] <= 0 {
		t.Errorf("summary's peak device memory %v, want one positive entry", res.Summary.PeakDevice)
	}
	cpu := tiny(t)
	cpu.Micro = 4
	onCPU, errs := trainRecorded(t, cpu)
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	for i, w := range want {
		if d := math.Abs(w.Loss - onCPU[i].Loss); d > 1e-4 {
			t.Errorf("step %d: CUDA loss %v, CPU %v: differ by %g > 1e-4", i, w.Loss, onCPU[i].Loss, d)
		}
		if onCPU[i].PeakDevice != nil {
			t.Errorf("step %d on the CPU reports device memory %v", i, onCPU[i].PeakDevice)
		}
	}
	for _, tc := range []struct {
		sched           string
		pp, dp, v, zero int
	}{{"1f1b", 2, 1, 0, 0}, {"zb-h1", 2, 1, 0, 0}, {"interleaved", 2, 1, 2, 0}, {"1f1b", 2, 2, 0, 0}, {"1f1b", 2, 2, 0, 1}, {"gpipe", 1, 4, 0, 1}} {
		t.Run(fmt.Sprintf("%s/pp%d/dp%d/zero%d", tc.sched, tc.pp, tc.dp, tc.zero), func(t *testing.T) {
			open, _ := cudaRanks(t)
			cfg := tiny(t)
			cfg.Schedule, cfg.PP, cfg.DP, cfg.Virtual, cfg.Zero = tc.sched, tc.pp, tc.dp, tc.v, tc.zero
			cfg.Micro = 4 / tc.dp
			cfg.CheckpointDir = t.TempDir()
			var got []StepRecord
			_, errs := trainInProcessOn(t, cfg, open, func(rank int, _ <-chan struct{}, job *Job) {
				job.Report = func(r StepRecord) { got = append(got, r) }
			})
			if err := errors.Join(errs...); err != nil {
				t.Fatal(err)
			}
			for i, w := range want {
				g := got[i]
				if g.Loss != w.Loss || fmt.Sprint(deref(g.ValLoss)) != fmt.Sprint(deref(w.ValLoss)) {
					t.Errorf("step %d: loss %v val %v, one process %v val %v", i, g.Loss, deref(g.ValLoss), w.Loss, deref(w.ValLoss))
				}
				if len(g.PeakDevice) != tc.pp*tc.dp {
					t.Errorf("step %d: peak device memory of %d ranks, want %d", i, len(g.PeakDevice), tc.pp*tc.dp)
				}
			}
			sameParams(t, cfg.CheckpointDir, ref.CheckpointDir, "one process on CUDA")
		})
	}
}

// TestTrainCUDASteadyMemory: a pipeline on CUDA with validation after every
// step ends holding as much device memory on every rank after 4 steps as
// after 2: the executor gives back every tensor it received, sent or handed
// on, and validation every activation it made.
func TestTrainCUDASteadyMemory(t *testing.T) {
	held := func(steps int) []int64 {
		open, opened := cudaRanks(t)
		cfg := tiny(t)
		cfg.Schedule, cfg.PP, cfg.Steps, cfg.EvalEvery = "zb-v", 2, steps, 1
		if _, errs := trainInProcessOn(t, cfg, open, nil); errors.Join(errs...) != nil {
			t.Fatal(errors.Join(errs...))
		}
		var in []int64
		for _, c := range opened() {
			in = append(in, c.MemoryStats().InUse)
		}
		return in
	}
	if two, four := held(2), held(4); fmt.Sprint(two) != fmt.Sprint(four) {
		t.Errorf("device bytes in use per rank: %v after 2 steps, %v after 4", two, four)
	}
}
