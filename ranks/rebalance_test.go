package ranks

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pplaunch/pplaunch/models"
	"github.com/pplaunch/pplaunch/schedules"
)

func TestParseRebalance(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want rebalanceWindows
		err  string
	}{
		{"", rebalanceWindows{}, ""},
		{"off", rebalanceWindows{}, ""},
		{"auto", rebalanceWindows{rebalanceAutoFirst, rebalanceAutoEvery}, ""},
		{"every:1", rebalanceWindows{1, 1}, ""},
		{"every:50", rebalanceWindows{50, 50}, ""},
		{"every:0", rebalanceWindows{}, "every:N"},
		{"every:-3", rebalanceWindows{}, "every:N"},
		{"every:", rebalanceWindows{}, "every:N"},
		{"sometimes", rebalanceWindows{}, `--rebalance "sometimes"`},
	} {
		got, err := parseRebalance(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q: error %v, want one with %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%q: %+v, %v; want %+v", tc.in, got, err, tc.want)
		}
	}
}

func TestRebalanceWindowsDue(t *testing.T) {
	auto, _ := parseRebalance("auto")
	every, _ := parseRebalance("every:3")
	for _, tc := range []struct {
		w       rebalanceWindows
		since   int
		checked bool
		want    bool
	}{
		{rebalanceWindows{}, 100, false, false},
		{auto, 3, false, false}, {auto, 4, false, true}, {auto, 4, true, false}, {auto, 20, true, true},
		{every, 2, false, false}, {every, 3, false, true}, {every, 3, true, true},
	} {
		if got := tc.w.due(tc.since, tc.checked); got != tc.want {
			t.Errorf("%+v due(%d, %v) = %v, want %v", tc.w, tc.since, tc.checked, got, tc.want)
		}
	}
}

// unitCosts is a model of layers blocks where every unit costs base per
// micro-batch (F, I and W alike) and the blocks listed in slow cost base+extra.
func unitCosts(layers int, base, extra float64, slow ...int) []UnitCost {
	c := make([]UnitCost, layers+2)
	for u := range c {
		x := base
		if slices.Contains(slow, u-1) {
			x += extra
		}
		c[u] = UnitCost{x, x, x}
	}
	return c
}

func TestDecideRecut(t *testing.T) {
	gen := func(name string, pp, m, v int) *schedules.Schedule {
		s, err := schedules.Generate(name, pp, m, v)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	for _, tc := range []struct {
		name      string
		s         *schedules.Schedule
		cut       []int
		costs     []UnitCost
		threshold float64
		want      []int // nil: the cut stays
	}{
		{"balanced stays", gen("1f1b", 2, 4, 0), []int{2, 2}, unitCosts(4, 1e-3, 0), 0.05, nil},
		{"slow last stage gives blocks to the first", gen("1f1b", 2, 4, 0), []int{2, 2}, unitCosts(4, 1e-3, 20e-3, 2, 3), 0.05, []int{3, 1}},
		{"slow first stage", gen("1f1b", 2, 4, 0), []int{2, 2}, unitCosts(4, 1e-3, 20e-3, 0, 1), 0.05, []int{1, 3}},
		{"slow middle of three", gen("1f1b", 3, 4, 0), []int{2, 2, 2}, unitCosts(6, 1e-3, 20e-3, 2, 3), 0.05, []int{2, 1, 3}},
		// A head a little heavier than two blocks: moving a block predicts a step 6.2% shorter.
		{"gain under the threshold", gen("1f1b", 2, 4, 0), []int{2, 2}, unitCosts(4, 1e-3, 1.1e-3, 4), 0.10, nil},
		{"same gain over a lower threshold", gen("1f1b", 2, 4, 0), []int{2, 2}, unitCosts(4, 1e-3, 1.1e-3, 4), 0.05, []int{3, 1}},
		{"already the best cut", gen("1f1b", 2, 4, 0), []int{3, 1}, unitCosts(4, 1e-3, 20e-3, 3), 0.05, nil},
		{"interleaved: the slow rank's stages shrink", gen("interleaved", 2, 4, 2), []int{2, 2, 2, 2}, unitCosts(8, 1e-3, 20e-3, 2, 3, 6, 7), 0.05, []int{3, 1, 3, 1}},
		{"gpipe", gen("gpipe", 2, 4, 0), []int{2, 2}, unitCosts(4, 1e-3, 20e-3, 2, 3), 0.05, []int{3, 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := DecideRecut(tc.s, tc.cut, tc.costs, tc.threshold)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(r.From, tc.cut) {
				t.Errorf("From %v, want %v", r.From, tc.cut)
			}
			if tc.want == nil {
				if r.Move {
					t.Errorf("moves to %v (gain %.3f), want the cut to stay", r.To, r.Gain())
				}
				return
			}
			if !r.Move || !slices.Equal(r.To, tc.want) {
				t.Errorf("move %v to %v, want a move to %v", r.Move, r.To, tc.want)
			}
			if !(r.AfterS < r.BeforeS) || r.Gain() <= tc.threshold {
				t.Errorf("predicted %g s -> %g s (gain %.3f), want a gain over %g", r.BeforeS, r.AfterS, r.Gain(), tc.threshold)
			}
		})
	}
}

func TestDecideRecutErrors(t *testing.T) {
	s, err := schedules.Generate("1f1b", 2, 4, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := DecideRecut(s, []int{2, 2}, unitCosts(3, 1, 0), 0.05); err == nil || !strings.Contains(err.Error(), "unit costs") {
		t.Errorf("costs of the wrong length: %v", err)
	}
	if _, err := DecideRecut(s, []int{1, 1, 2}, unitCosts(4, 1, 0), 0.05); err == nil || !strings.Contains(err.Error(), "3 stages") {
		t.Errorf("a cut of the wrong number of stages: %v", err)
	}
}

func TestRecutMoves(t *testing.T) {
	m := models.Config{Kind: "gpt", Vocab: 256, Layers: 4, Width: 16, Heads: 2, Seq: 8, Tied: true}
	blockOf := func(name string) string { return strings.SplitN(name, ".", 3)[1] } // h.N.attn... -> N
	for _, tc := range []struct {
		name      string
		placement []int
		from, to  []int
		want      map[string][2]int // block -> (from, to) pipeline rank
	}{
		{"no change", []int{0, 1}, []int{2, 2}, []int{2, 2}, map[string][2]int{}},
		{"one block to the first rank", []int{0, 1}, []int{2, 2}, []int{3, 1}, map[string][2]int{"2": {1, 0}}},
		{"two blocks to the last rank", []int{0, 1}, []int{3, 1}, []int{1, 3}, map[string][2]int{"1": {0, 1}, "2": {0, 1}}},
		{"three ranks", []int{0, 1, 2}, []int{1, 2, 1}, []int{2, 1, 1}, map[string][2]int{"1": {1, 0}, "2": {1, 1}}},
		{"interleaved: stages on one rank", []int{0, 1, 0, 1}, []int{1, 1, 1, 1}, []int{1, 1, 1, 1}, map[string][2]int{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := map[string][2]int{}
			for _, mv := range recutMoves(m, tc.placement, tc.from, tc.to) {
				if !strings.HasPrefix(mv.Name, "transformer.h.") && !strings.HasPrefix(mv.Name, "h.") {
					t.Errorf("%s moves: the embedding and head stay with the first and last stage", mv.Name)
					continue
				}
				b := blockOf(strings.TrimPrefix(mv.Name, "transformer."))
				if old, ok := got[b]; ok && old != [2]int{mv.From, mv.To} {
					t.Errorf("block %s's parameters move differently: %v and %v", b, old, [2]int{mv.From, mv.To})
				}
				got[b] = [2]int{mv.From, mv.To}
			}
			for b, w := range tc.want {
				if w[0] == w[1] {
					delete(tc.want, b) // stays on its rank
				}
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("moves %v, want %v", got, tc.want)
			}
		})
	}
}

func TestRebalanceConfigRefusals(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*TrainConfig)
		want string
	}{
		{"bad mode", func(c *TrainConfig) { c.Rebalance = "every:x" }, "every:N"},
		{"threshold", func(c *TrainConfig) { c.Rebalance, c.RebalanceThreshold = "auto", 1.5 }, "--rebalance-threshold 1.5"},
		{"zero 1 over replicas", func(c *TrainConfig) { c.Rebalance, c.Zero, c.PP, c.DP = "auto", 1, 2, 2 }, "--zero 0"},
		{"profile", func(c *TrainConfig) { c.Rebalance, c.Profile = "every:5", true }, "--profile"},
	} {
		c := tiny(t)
		tc.edit(&c)
		if _, err := c.Plan(c.PP * c.DP); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error with %q", tc.name, err, tc.want)
		}
	}
	c := tiny(t)
	c.Rebalance, c.Zero, c.PP, c.DP = "auto", 1, 2, 1 // one replica: nothing sharded
	if _, err := c.Plan(2); err != nil {
		t.Errorf("--zero 1 with one replica: %v", err)
	}
}

// slowMs is the CPU the slowed rank burns per block and micro-batch in the
// in-process tests: hundreds of times a tiny block's own time, so no noise
// of a loaded machine can make its blocks look as fast as the others.
const slowMs = 15

// TestRebalanceMatchesResume: with one pipeline rank slowed (Job.Slow),
// --rebalance every:2 moves blocks off it after step 2, and the run ends
// with the parameters, bit for bit, of a run resumed from a checkpoint of
// step 2 with the new cut, and of one process: for AdamW and SGD, tied
// embeddings, data-parallel replicas (only replica 0's rank slowed: the
// agreed mean still moves every replica) and interleaved stages.
func TestRebalanceMatchesResume(t *testing.T) {
	for _, tc := range []struct {
		name        string
		edit        func(*TrainConfig)
		slowRank    int
		slowStages  []int
		cut, expect []int
	}{
		{"1f1b pp2", func(c *TrainConfig) {}, 1, []int{1}, []int{2, 2}, []int{3, 1}},
		{"sgd pp2 first rank slow", func(c *TrainConfig) { c.Optimizer, c.Momentum = "sgd", 0.9 }, 0, []int{0}, []int{2, 2}, []int{1, 3}},
		{"1f1b pp2 dp2", func(c *TrainConfig) { c.DP = 2 }, 1, []int{1}, []int{2, 2}, []int{3, 1}},
		{"interleaved pp2 v2", func(c *TrainConfig) { c.Schedule, c.Virtual, c.Model.Layers = "interleaved", 2, 8 }, 1, []int{1, 3}, []int{2, 2, 2, 2}, []int{3, 1, 3, 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tiny(t)
			cfg.PP, cfg.Steps, cfg.LRDecaySteps, cfg.Warmup = 2, 6, 6, 2
			tc.edit(&cfg)
			cfg.Rebalance, cfg.RebalanceThreshold = "every:2", DefaultRebalanceThreshold
			cfg.CheckpointDir = t.TempDir()
			var events []EventRecord
			_, errs := trainInProcess(t, cfg, func(rank int, _ <-chan struct{}, job *Job) {
				if rank == tc.slowRank {
					job.Slow = func(int, models.Pass) { burn(slowMs * time.Millisecond / 2) }
				}
				if rank == 0 {
					job.Event = func(e EventRecord) { events = append(events, e) }
				}
			})
			if err := errors.Join(errs...); err != nil {
				t.Fatal(err)
			}
			var moves []EventRecord
			for _, e := range events {
				if e.Record == RecordRebalance {
					moves = append(moves, e)
				}
			}
			if len(moves) != 1 {
				t.Fatalf("%d rebalances (%+v), want one, after step 2", len(moves), moves)
			}
			mv := moves[0]
			t.Logf("%s", mv.line())
			if mv.Step != 2 || !slices.Equal(mv.CutBefore, tc.cut) || !slices.Equal(mv.Cut, tc.expect) {
				t.Fatalf("rebalance after step %d from %v to %v, want after step 2 from %v to %v", mv.Step, mv.CutBefore, mv.Cut, tc.cut, tc.expect)
			}
			for _, s := range tc.slowStages {
				if mv.Cut[s] >= mv.CutBefore[s] {
					t.Errorf("the slowed stage %d went from %d to %d blocks, want fewer", s, mv.CutBefore[s], mv.Cut[s])
				}
			}
			resumed := cfg
			resumed.Rebalance, resumed.CheckpointDir, resumed.Steps = RebalanceOff, t.TempDir(), 2
			if _, errs := trainInProcess(t, resumed, nil); errors.Join(errs...) != nil {
				t.Fatal(errors.Join(errs...))
			}
			resumed.Steps, resumed.Resume = 6, true
			resumed.Cut = func(int) ([]int, error) { return slices.Clone(mv.Cut), nil }
			if _, errs := trainInProcess(t, resumed, nil); errors.Join(errs...) != nil {
				t.Fatal(errors.Join(errs...))
			}
			sameParams(t, cfg.CheckpointDir, resumed.CheckpointDir, "the run resumed at step 2 with the new cut")
			one := cfg
			one.PP, one.DP, one.Virtual, one.Schedule, one.Micro = 1, 1, 0, "1f1b", cfg.Micro*cfg.DP
			one.Rebalance, one.CheckpointDir = RebalanceOff, t.TempDir()
			if _, errs := trainInProcess(t, one, nil); errors.Join(errs...) != nil {
				t.Fatal(errors.Join(errs...))
			}
			sameParams(t, cfg.CheckpointDir, one.CheckpointDir, "one process")
		})
	}
}
