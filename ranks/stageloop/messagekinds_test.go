package stageloop

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pplaunch/pplaunch/collective"
	"github.com/pplaunch/pplaunch/models/tensor"
	"github.com/pplaunch/pplaunch/schedules"
)

// wrongOut is a stage whose output is not the shape its next stage takes.
type wrongOut struct{ *fakeStage }

func (w wrongOut) OutShape(batch int) []int { return []int{batch, 99} }

// checkRanks runs every rank's Transfers through collective.CheckShapes over
// the in-memory communicator; stage makes rank p's stage.
func checkRanks(t *testing.T, sched *schedules.Schedule, stage func(p int) Stage) []error {
	t.Helper()
	return checkRanksAs(t, sched, stage, func(int) tensor.DType { return tensor.Float32 })
}

// checkRanksAs is checkRanks with rank p's activations of dtype act(p).
func checkRanksAs(t *testing.T, sched *schedules.Schedule, stage func(p int) Stage, act func(p int) tensor.DType) []error {
	t.Helper()
	comms, err := collective.NewMemoryWorld(sched.P, collective.Options{Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	errs := make([]error, sched.P)
	var wg sync.WaitGroup
	for p := range sched.P {
		wg.Go(func() {
			defer comms[p].Close()
			x := &Executor{Sched: sched, PRank: p, Stages: map[int]Stage{p: stage(p)}, Comm: comms[p],
				Peer: func(q int) int { return q }, MicroSize: 2, Act: act(p)}
			errs[p] = collective.CheckShapes(context.Background(), comms[p], 0, x.MessageKinds())
		})
	}
	wg.Wait()
	return errs
}

// TestTransferShapesChecked: the shapes every rank states for its list's
// transfers agree on a right pipeline; a stage whose output is a hand-made
// wrong shape is refused on both of its ranks, naming both ranks and both
// shapes.
func TestTransferShapesChecked(t *testing.T) {
	sched, err := schedules.Generate("1f1b", 3, 4, 1)
	if err != nil {
		t.Fatal(err)
	}
	rec := &recorded{}
	right := func(p int) Stage { return &fakeStage{rec: rec, index: p, last: p == sched.P-1} }
	if err := errors.Join(checkRanks(t, sched, right)...); err != nil {
		t.Fatalf("right shapes refused: %v", err)
	}
	errs := checkRanks(t, sched, func(p int) Stage {
		if p == 1 {
			return wrongOut{&fakeStage{rec: rec, index: p}}
		}
		return right(p)
	})
	for p, want := range []string{
		"", // rank 0 states nothing about rank 1's output: its error names rank 1 or 2
		"gradient chunk=1 from rank 2 to rank 1: rank 2 sends float32[2 5] but rank 1 expects float32[2 99]",
		"activation chunk=2 from rank 1 to rank 2: rank 1 sends float32[2 99] but rank 2 expects float32[2 5]",
	} {
		err := errs[p]
		if err == nil || !errors.Is(err, collective.ErrShape) || !strings.Contains(err.Error(), want) {
			t.Errorf("rank %d: %v, want a shape error with %q", p, err, want)
		}
	}
}

// TestTransferDTypesChecked: bf16 pipelines state bfloat16 transfers and
// agree; a rank whose activations are float32 among bfloat16 ones is
// refused, naming both dtypes.
func TestTransferDTypesChecked(t *testing.T) {
	sched, err := schedules.Generate("1f1b", 3, 4, 1)
	if err != nil {
		t.Fatal(err)
	}
	rec := &recorded{}
	stage := func(p int) Stage { return &fakeStage{rec: rec, index: p, last: p == sched.P-1} }
	bf16 := func(int) tensor.DType { return tensor.BFloat16 }
	if err := errors.Join(checkRanksAs(t, sched, stage, bf16)...); err != nil {
		t.Fatalf("bf16 everywhere refused: %v", err)
	}
	errs := checkRanksAs(t, sched, stage, func(p int) tensor.DType {
		if p == 1 {
			return tensor.Float32
		}
		return tensor.BFloat16
	})
	want := "activation chunk=1 from rank 0 to rank 1: rank 0 sends bfloat16[2 4] but rank 1 expects float32[2 4]"
	if err := errs[1]; err == nil || !errors.Is(err, collective.ErrShape) || !strings.Contains(err.Error(), want) {
		t.Errorf("rank 1: %v, want a shape error with %q", err, want)
	}
	if errs[0] == nil || errs[2] == nil {
		t.Errorf("ranks 0 and 2 started with a mismatched peer: %v, %v", errs[0], errs[2])
	}
}
