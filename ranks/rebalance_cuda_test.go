package ranks

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/pplaunch/pplaunch/models/tensor"
)

// TestRebalanceCUDA: on the CUDA backend (over the emulator), with rank 1
// counted slower (slowed), a rebalance
// moves the blocks through the backend's download and upload and gives the
// bits of the run resumed with the new cut; afterwards every rank holds as
// much device memory as that resumed run does: the old stages' parameters,
// gradients, buffers and optimizer moments were freed.
func TestRebalanceCUDA(t *testing.T) {
	open, opened := cudaRanks(t)
	cfg := tiny(t)
	cfg.PP, cfg.Micro, cfg.Steps, cfg.LRDecaySteps, cfg.Warmup = 2, 2, 4, 4, 2
	cfg.Rebalance, cfg.RebalanceThreshold = "every:2", DefaultRebalanceThreshold
	cfg.CheckpointDir = t.TempDir()
	// Counted, not burnt: the emulator's kernels run on the CPU, as slow as
	// the machine is loaded, which no burn relative to them outweighs.
	moves := trainSlowed(t, cfg, open, 1, slowed)
	for _, m := range moves {
		t.Logf("%s", m.line())
	}
	if len(moves) != 1 || moves[0].Step != 2 || !slices.Equal(moves[0].Cut, []int{3, 1}) {
		t.Fatalf("rebalances %+v, want one after step 2 to 3,1", moves)
	}
	memory := func(cs []*tensor.CUDA) []int64 {
		var in []int64
		for _, c := range cs {
			in = append(in, c.MemoryStats().InUse)
		}
		return in
	}
	moved := memory(opened())

	open2, opened2 := cudaRanks(t)
	resumed := cfg
	resumed.Rebalance, resumed.CheckpointDir, resumed.Steps = RebalanceOff, t.TempDir(), 2
	if _, errs := trainInProcessOn(t, resumed, open2, nil); errors.Join(errs...) != nil {
		t.Fatal(errors.Join(errs...))
	}
	open3, opened3 := cudaRanks(t)
	resumed.Steps, resumed.Resume = 4, true
	resumed.Cut = func(int) ([]int, error) { return []int{3, 1}, nil }
	if _, errs := trainInProcessOn(t, resumed, open3, nil); errors.Join(errs...) != nil {
		t.Fatal(errors.Join(errs...))
	}
	_ = opened2
	sameParams(t, cfg.CheckpointDir, resumed.CheckpointDir, "the run resumed at step 2 with the new cut on CUDA")
	if want := memory(opened3()); fmt.Sprint(moved) != fmt.Sprint(want) {
		t.Errorf("device bytes in use per rank after the rebalanced run %v, after the resumed one %v", moved, want)
	}
}
