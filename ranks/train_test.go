package ranks

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pplaunch/pplaunch/collective"
	"github.com/pplaunch/pplaunch/models"
	"github.com/pplaunch/pplaunch/models/checkpoint"
	"github.com/pplaunch/pplaunch/models/tensor"
	"github.com/pplaunch/pplaunch/ranks/store"
	"github.com/pplaunch/pplaunch/schedules"
)

// tiny is a model for fast in-process jobs: 4 blocks, tied embeddings.
func tiny(t *testing.T) TrainConfig {
	t.Helper()
	return TrainConfig{
		Model:    models.Config{Kind: "gpt", Vocab: 256, Layers: 4, Width: 16, Heads: 2, Seq: 8, Tied: true},
		Schedule: "1f1b", Micro: 4, MicroSize: 2, PP: 1, DP: 1,
		Optimizer: "adamw", LR: 3e-3, MinLR: 3e-4, Warmup: 1, WeightDecay: 0.1, Clip: 1,
		Steps: 2, EvalBatches: 1, Seed: 7, Timeout: 30 * time.Second,
	}
}

// trainInProcess runs cfg on pp·dp goroutine ranks over the in-memory
// communicator and store, and returns rank 0's result and every rank's error.
// stall, if set, gives a rank's stall hook; stop is closed once a rank fails.
func trainInProcess(t *testing.T, cfg TrainConfig, stall func(rank int, stop <-chan struct{}) func(int, schedules.Action)) (*Result, []error) {
	t.Helper()
	size := cfg.PP * cfg.DP
	comms, err := collective.NewMemoryWorld(size, collective.Options{Timeout: cfg.Timeout})
	if err != nil {
		t.Fatal(err)
	}
	st := store.NewMemory()
	defer st.Close()
	be, err := tensor.NewCPU("")
	if err != nil {
		t.Fatal(err)
	}
	errs := make([]error, size)
	var res *Result
	var wg sync.WaitGroup
	stop, once := make(chan struct{}), sync.Once{}
	for r := range size {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer comms[r].Close()
			job := Job{Rank: r, Size: size, Store: st, Comm: comms[r], Backend: be}
			if stall != nil {
				job.Stall = stall(r, stop)
			}
			out, err := Train(context.Background(), cfg, job)
			errs[r] = err
			if err != nil {
				// As the agent would: stop the others.
				once.Do(func() { close(stop) })
				comms[r].Abort(err)
			}
			if r == 0 {
				res = out
			}
		}()
	}
	wg.Wait()
	return res, errs
}

func TestTrainMatchesOneProcess(t *testing.T) {
	ref := tiny(t)
	ref.Micro = 8
	ref.CheckpointDir = t.TempDir()
	want, errs := trainInProcess(t, ref, nil)
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		sched  string
		pp, dp int
		v      int
	}{
		{"1f1b", 4, 2, 0}, {"interleaved", 2, 1, 2}, {"zb-h1", 2, 2, 0}, {"gpipe", 1, 2, 0}, {"zb-v", 2, 1, 0},
	} {
		t.Run(fmt.Sprintf("%s/pp%d/dp%d", tc.sched, tc.pp, tc.dp), func(t *testing.T) {
			cfg := tiny(t)
			cfg.Schedule, cfg.PP, cfg.DP, cfg.Virtual = tc.sched, tc.pp, tc.dp, tc.v
			cfg.Micro = 8 / tc.dp
			cfg.CheckpointDir = t.TempDir()
			got, errs := trainInProcess(t, cfg, nil)
			if err := errors.Join(errs...); err != nil {
				t.Fatal(err)
			}
			for i, w := range want.Records {
				g := got.Records[i]
				if g.Loss != w.Loss || fmt.Sprint(deref(g.ValLoss)) != fmt.Sprint(deref(w.ValLoss)) {
					t.Errorf("step %d: loss %v val %v, one process %v val %v", i, g.Loss, deref(g.ValLoss), w.Loss, deref(w.ValLoss))
				}
			}
			if want.Records[len(want.Records)-1].ValLoss == nil {
				t.Error("no validation loss at the last step")
			}
			_, _, rep, err := checkpoint.CompareDirs(cfg.CheckpointDir, ref.CheckpointDir, checkpoint.Tolerance{})
			if err != nil {
				t.Fatal(err)
			}
			if !rep.OK() {
				t.Errorf("%d tensors differ from one process", rep.Mismatches())
			}
		})
	}
}

// TestTrainTimeoutNamesActionAndPeer: a rank that stops answering makes its
// neighbour's wait time out with an error naming the step, action,
// micro-batch and peer.
func TestTrainTimeoutNamesActionAndPeer(t *testing.T) {
	cfg := tiny(t)
	cfg.PP, cfg.Timeout = 2, 500*time.Millisecond
	_, errs := trainInProcess(t, cfg, func(rank int, stop <-chan struct{}) func(int, schedules.Action) {
		if rank != 1 {
			return nil
		}
		return func(step int, a schedules.Action) {
			if step == 1 && a == (schedules.Action{Kind: schedules.F, Stage: 1, Micro: 0}) {
				<-stop
			}
		}
	})
	var ae *ActionError
	if !errors.As(errs[0], &ae) {
		t.Fatalf("rank 0: %v, want an action error", errs[0])
	}
	if ae.Step != 1 || ae.Peer != 1 || ae.Action.Kind != schedules.RecvB || !strings.Contains(ae.Error(), "timeout") {
		t.Errorf("rank 0: %v", ae)
	}
}

func TestTrainConfigCheck(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*TrainConfig)
		size int
		want string
	}{
		{"world", func(c *TrainConfig) { c.PP = 2 }, 4, "--pp 2 × --dp 1 = 2 ranks, but the world has 4"},
		{"micro", func(c *TrainConfig) { c.Micro = 0 }, 1, "--microbatches 0"},
		{"dp needs power of two", func(c *TrainConfig) { c.DP, c.Micro = 2, 3 }, 2, "power of two"},
		{"size", func(c *TrainConfig) { c.MicroSize = 0 }, 1, "--microbatch-size 0"},
		{"checkpoint dir", func(c *TrainConfig) { c.CheckpointEvery = 2 }, 1, "need --checkpoint-dir"},
		{"model", func(c *TrainConfig) { c.Model.Heads = 3 }, 1, "head"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := tiny(t)
			tc.edit(&c)
			err := c.Check(tc.size)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Check: %v, want %q", err, tc.want)
			}
		})
	}
}

func deref(p *float64) any {
	if p == nil {
		return nil
	}
	return *p
}
