package ranks

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/pplaunch/pplaunch/collective"
	"github.com/pplaunch/pplaunch/models"
	"github.com/pplaunch/pplaunch/models/checkpoint"
	"github.com/pplaunch/pplaunch/models/tensor"
)

// TestZeroMoves: a parameter inside one replica's part moves nowhere; one
// across parts goes whole to the owner of its first element; a tied one
// whole to every replica.
func TestZeroMoves(t *testing.T) {
	// 10 elements over 3 replicas: parts [0,4) [4,7) [7,10).
	for _, tc := range []struct {
		name   string
		params []zeroParam
		want   []gradMove
	}{
		{"inside", []zeroParam{{0, 4, false}, {4, 3, false}, {7, 3, false}}, nil},
		{"across two", []zeroParam{{0, 2, false}, {2, 4, false}, {6, 4, false}}, []gradMove{{1, 0, 4, 6}, {2, 1, 7, 10}}},
		{"across three", []zeroParam{{0, 1, false}, {1, 9, false}}, []gradMove{{1, 0, 4, 7}, {2, 0, 7, 10}}},
		{"tied inside", []zeroParam{{0, 3, true}, {3, 7, false}}, []gradMove{{0, 1, 0, 3}, {0, 2, 0, 3}, {1, 0, 4, 7}, {2, 0, 7, 10}}},
		{"tied across", []zeroParam{{0, 1, false}, {1, 5, true}, {6, 4, false}}, []gradMove{
			{0, 1, 1, 4}, {0, 2, 1, 4}, {1, 0, 4, 6}, {1, 2, 4, 6}, {2, 1, 7, 10}}},
		{"empty", []zeroParam{{0, 0, true}, {0, 10, false}}, []gradMove{{1, 0, 4, 7}, {2, 0, 7, 10}}},
	} {
		if got := zeroMoves(tc.params, 10, 3); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
	for i, want := range []int{0, 0, 0, 0, 1, 1, 1, 2, 2, 2} {
		if got := owner(10, 3, i); got != want {
			t.Errorf("owner of element %d: %d, want %d", i, got, want)
		}
	}
}

// odd is a model whose every size is odd or prime, so that no stage's
// layout divides by 2 or 4 and parameters straddle the replicas' parts;
// tied embeddings, weight decay and a clip the gradient norm exceeds.
func odd(t *testing.T) TrainConfig {
	c := tiny(t)
	c.Model = models.Config{Kind: "gpt", Vocab: 251, Layers: 4, Width: 18, Heads: 2, Seq: 7, Tied: true}
	c.Micro, c.Clip, c.WeightDecay, c.Steps = 8, 0.05, 0.1, 3
	return c
}

// TestTrainZeroSameBits: ZeRO stage 1 on dp 2 and 4, pp 1 and 2 (two
// stages per rank interleaved; and with SGD) gives the losses, validation losses, gradient norms and final
// checkpoint (parameters and optimizer state) of one process, bit for bit,
// as the same layouts without it do; and each rank holds about 1/dp of the
// optimizer state the replica would hold whole.
func TestTrainZeroSameBits(t *testing.T) {
	ref := odd(t)
	ref.CheckpointDir = t.TempDir()
	want, errs := trainRecorded(t, ref)
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	for _, w := range want {
		if w.GradNorm <= ref.Clip {
			t.Fatalf("step %d: gradient norm %g within --clip %g: the test would not clip", w.Step, w.GradNorm, ref.Clip)
		}
	}
	whole := sumBytes(want[len(want)-1].OptimizerBytes)
	if whole != 2*4*int64(modelParams(ref.Model)) {
		t.Fatalf("one process holds %d bytes of AdamW state, want 8 per parameter (%d)", whole, 8*modelParams(ref.Model))
	}
	for _, tc := range []struct {
		pp, dp, zero int
		opt, sched   string
	}{
		{1, 2, 0, "adamw", "1f1b"}, {1, 2, 1, "adamw", "1f1b"}, {1, 4, 1, "adamw", "gpipe"}, {2, 2, 1, "adamw", "1f1b"}, {2, 4, 0, "adamw", "1f1b"},
		{2, 4, 1, "adamw", "zb-h1"}, {2, 2, 1, "adamw", "interleaved"}, {2, 2, 1, "sgd", "1f1b"},
	} {
		t.Run(fmt.Sprintf("%s/pp%d/dp%d/zero%d/%s", tc.sched, tc.pp, tc.dp, tc.zero, tc.opt), func(t *testing.T) {
			want, refDir := want, ref.CheckpointDir
			if tc.opt != ref.Optimizer {
				r := ref
				r.Optimizer, r.CheckpointDir = tc.opt, t.TempDir()
				var errs []error
				if want, errs = trainRecorded(t, r); errors.Join(errs...) != nil {
					t.Fatal(errors.Join(errs...))
				}
				refDir = r.CheckpointDir
			}
			cfg := odd(t)
			cfg.PP, cfg.DP, cfg.Zero, cfg.Optimizer, cfg.Schedule = tc.pp, tc.dp, tc.zero, tc.opt, tc.sched
			cfg.Micro = 8 / tc.dp
			cfg.CheckpointDir = t.TempDir()
			got, errs := trainRecorded(t, cfg)
			if err := errors.Join(errs...); err != nil {
				t.Fatal(err)
			}
			sameSteps(t, got, want)
			sameParams(t, cfg.CheckpointDir, refDir, "one process")
			checkZeroBytes(t, cfg, got[len(got)-1].OptimizerBytes, sumBytes(want[len(want)-1].OptimizerBytes))
		})
	}
}

// sameSteps checks losses, validation losses and gradient norms bit for bit.
func sameSteps(t *testing.T, got, want []StepRecord) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d steps reported, want %d", len(got), len(want))
	}
	for i, w := range want {
		g := got[i]
		if math.Float64bits(g.Loss) != math.Float64bits(w.Loss) || fmt.Sprint(deref(g.ValLoss)) != fmt.Sprint(deref(w.ValLoss)) ||
			math.Float64bits(g.GradNorm) != math.Float64bits(w.GradNorm) {
			t.Errorf("step %d: loss %v val %v norm %v, want %v val %v norm %v", i, g.Loss, deref(g.ValLoss), g.GradNorm, w.Loss, deref(w.ValLoss), w.GradNorm)
		}
	}
}

// checkZeroBytes checks each rank's optimizer bytes against the layout:
// the replicas of a pipeline rank hold whole (the bytes of one process
// over the pipeline ranks) without ZeRO, and under it parts that add up to
// the whole, none above its share rounded up.
func checkZeroBytes(t *testing.T, cfg TrainConfig, got []int64, whole int64) {
	t.Helper()
	l, err := cfg.Plan(cfg.PP * cfg.DP)
	if err != nil {
		t.Fatal(err)
	}
	perElem := int64(8)
	if cfg.Optimizer == "sgd" {
		perElem = 4
	}
	var sum int64
	for r, b := range got {
		p, d := r%cfg.PP, r/cfg.PP
		var want int64
		for _, s := range l.Sched.StagesOf(p) {
			st, err := models.NewStage(cfg.Model, l.Cut, s, hostBE(t), models.StageOptions{})
			if err != nil {
				t.Fatal(err)
			}
			n := st.GradTensor().Len()
			lo, hi := 0, n
			if cfg.Zero == 1 {
				lo, hi = collective.ChunkBounds(n, cfg.DP, d)
			}
			want += perElem * int64(hi-lo)
		}
		if b != want {
			t.Errorf("rank %d holds %d bytes of optimizer state, want %d", r, b, want)
		}
		sum += b
	}
	if reps := int64(cfg.DP); cfg.Zero == 1 {
		reps = 1
		if sum != whole {
			t.Errorf("the ranks hold %d bytes of optimizer state together, one process %d", sum, whole)
		}
	} else if sum != reps*whole {
		t.Errorf("the ranks hold %d bytes of optimizer state together, want %d replicas of %d", sum, reps, whole)
	}
}

func sumBytes(v []int64) int64 {
	var n int64
	for _, b := range v {
		n += b
	}
	return n
}

// modelParams counts the model's parameters, tied copies included (each
// stage's optimizer keeps state for the copy it holds).
func modelParams(c models.Config) int {
	n := 0
	for _, p := range c.Params() {
		n += p.Numel()
	}
	return n
}

// TestTrainZeroResumesAnyLayout: a run stopped after step 2 and resumed
// with ZeRO switched on or off, and with another dp, ends with the
// checkpoint of an uninterrupted run of one process: checkpoints hold no
// trace of the layout that wrote them.
func TestTrainZeroResumesAnyLayout(t *testing.T) {
	ref := odd(t)
	ref.Steps = 4
	ref.CheckpointDir = t.TempDir()
	if _, errs := trainInProcess(t, ref, nil); errors.Join(errs...) != nil {
		t.Fatal(errors.Join(errs...))
	}
	type layout struct{ pp, dp, zero int }
	for _, tc := range []struct{ first, then layout }{
		{layout{2, 2, 1}, layout{2, 2, 0}}, // off after on
		{layout{1, 2, 0}, layout{2, 2, 1}}, // on after off, another pp
		{layout{1, 2, 1}, layout{1, 4, 1}}, // another dp
		{layout{2, 4, 1}, layout{1, 1, 0}}, // to one process
	} {
		t.Run(fmt.Sprintf("%v->%v", tc.first, tc.then), func(t *testing.T) {
			cfg := ref
			cfg.CheckpointDir = t.TempDir()
			run := func(l layout, stopAfter int) *Result {
				c := cfg
				c.PP, c.DP, c.Zero, c.Micro, c.Resume = l.pp, l.dp, l.zero, 8/l.dp, stopAfter == 0
				res, errs := trainInProcess(t, c, func(rank int, _ <-chan struct{}, job *Job) {
					if rank == 0 && stopAfter > 0 {
						asked := 0
						job.Stop = func() bool { asked++; return asked >= stopAfter }
					}
				})
				if err := errors.Join(errs...); err != nil {
					t.Fatal(err)
				}
				return res
			}
			if res := run(tc.first, 2); !res.Stopped || res.Steps != 2 {
				t.Fatalf("stopped %v after %d steps, want a stop after step 2", res.Stopped, res.Steps)
			}
			if res := run(tc.then, 0); res.FirstStep != 2 {
				t.Fatalf("resumed at step %d, want 2", res.FirstStep)
			}
			sameParams(t, cfg.CheckpointDir, ref.CheckpointDir, "the uninterrupted run")
		})
	}
}

// TestTrainZeroRefusesStages: stages 2 and 3 are refused saying that
// pipelines allow only 0 and 1; any other number names the choices.
func TestTrainZeroRefusesStages(t *testing.T) {
	for _, tc := range []struct {
		zero int
		want string
	}{
		{2, "pipelines allow only stage 0 (off) or 1"}, {3, "--zero 3: ZeRO stage 3 shards the gradients"}, {-1, "--zero -1: want 0 (off) or 1"},
	} {
		c := tiny(t)
		c.Zero = tc.zero
		if _, err := c.Plan(1); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("--zero %d: %v, want %q", tc.zero, err, tc.want)
		}
	}
	c := tiny(t)
	c.Zero = 1
	if _, err := c.Plan(1); err != nil {
		t.Errorf("--zero 1 on one replica: %v", err)
	}
}

// TestCheckpointHoldsOptimizerState: the comparison of checkpoints above
// covers the optimizer state, not only the parameters.
func TestCheckpointHoldsOptimizerState(t *testing.T) {
	cfg := odd(t)
	cfg.Steps, cfg.PP, cfg.DP, cfg.Zero, cfg.Micro = 1, 1, 2, 1, 4
	cfg.CheckpointDir = t.TempDir()
	if _, errs := trainInProcess(t, cfg, nil); errors.Join(errs...) != nil {
		t.Fatal(errors.Join(errs...))
	}
	dir, _, err := checkpoint.Resolve(cfg.CheckpointDir)
	if err != nil {
		t.Fatal(err)
	}
	_, ts, err := checkpoint.ReadTensors(dir)
	if err != nil {
		t.Fatal(err)
	}
	state := 0
	for _, x := range ts {
		if strings.Contains(x.Name, models.SlotAdamM) || strings.Contains(x.Name, models.SlotAdamV) {
			state++
			nonzero := false
			for _, v := range x.Data {
				nonzero = nonzero || v != 0
			}
			if !nonzero && !strings.Contains(x.Name, "bias") {
				t.Errorf("%s is all zeros after a step", x.Name)
			}
		}
	}
	if want := 2 * len(cfg.Model.Params()); state != want {
		t.Errorf("%d optimizer state tensors in the checkpoint, want %d", state, want)
	}
}

func hostBE(t *testing.T) tensor.Backend {
	t.Helper()
	be, err := tensor.NewCPU("")
	if err != nil {
		t.Fatal(err)
	}
	return be
}
