package ranks

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pplaunch/pplaunch/models"
	"github.com/pplaunch/pplaunch/models/tensor"
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
		seen      []CutRun
		moves     [][2][]int
		want      []int // nil: the cut stays
		back      bool
	}{
		{"balanced stays", gen("1f1b", 2, 4, 0), []int{2, 2}, unitCosts(4, 1e-3, 0), 0.05, nil, nil, nil, false},
		{"slow last stage gives blocks to the first", gen("1f1b", 2, 4, 0), []int{2, 2}, unitCosts(4, 1e-3, 20e-3, 2, 3), 0.05, nil, nil, []int{3, 1}, false},
		{"slow first stage", gen("1f1b", 2, 4, 0), []int{2, 2}, unitCosts(4, 1e-3, 20e-3, 0, 1), 0.05, nil, nil, []int{1, 3}, false},
		{"slow middle of three", gen("1f1b", 3, 4, 0), []int{2, 2, 2}, unitCosts(6, 1e-3, 20e-3, 2, 3), 0.05, nil, nil, []int{2, 1, 3}, false},
		// A head a little heavier than two blocks: moving a block predicts a step 6.2% shorter.
		{"gain under the threshold", gen("1f1b", 2, 4, 0), []int{2, 2}, unitCosts(4, 1e-3, 1.1e-3, 4), 0.10, nil, nil, nil, false},
		{"same gain over a lower threshold", gen("1f1b", 2, 4, 0), []int{2, 2}, unitCosts(4, 1e-3, 1.1e-3, 4), 0.05, nil, nil, []int{3, 1}, false},
		{"already the best cut", gen("1f1b", 2, 4, 0), []int{3, 1}, unitCosts(4, 1e-3, 20e-3, 3), 0.05, nil, nil, nil, false},
		{"interleaved: the slow rank's stages shrink", gen("interleaved", 2, 4, 2), []int{2, 2, 2, 2}, unitCosts(8, 1e-3, 20e-3, 2, 3, 6, 7), 0.05, nil, nil, []int{3, 1, 3, 1}, false},
		{"gpipe", gen("gpipe", 2, 4, 0), []int{2, 2}, unitCosts(4, 1e-3, 20e-3, 2, 3), 0.05, nil, nil, []int{3, 1}, false},
		// A slowed rank 1 of an interleaved pp 2: the cut of 3,3,1,1 predicted
		// faster ran slower than 2,1,3,2 did, so the ranks go back to it, and
		// from there do not try a cut that ran slower again. (The seen steps
		// are fractions of the current cut's simulated step.)
		{"back to a cut measured faster", gen("interleaved", 2, 4, 2), []int{3, 3, 1, 1}, unitCosts(8, 1e-3, 20e-3, 3, 4, 5, 7), 0.05,
			[]CutRun{{[]int{2, 2, 2, 2}, 1.1}, {[]int{2, 1, 3, 2}, 0.75}}, nil, []int{2, 1, 3, 2}, true},
		{"the optimal cut without the measurements", gen("interleaved", 2, 4, 2), []int{2, 1, 3, 2}, unitCosts(8, 1e-3, 20e-3, 2, 6, 7), 0.05, nil, nil, []int{2, 2, 3, 1}, false},
		{"a cut measured slower is not tried again", gen("interleaved", 2, 4, 2), []int{2, 1, 3, 2}, unitCosts(8, 1e-3, 20e-3, 2, 6, 7), 0.05,
			[]CutRun{{[]int{2, 2, 2, 2}, 1.5}, {[]int{2, 2, 3, 1}, 1.3}}, nil, nil, false},
		{"a cut measured faster within the threshold: the prediction decides", gen("1f1b", 2, 4, 0), []int{2, 2}, unitCosts(4, 1e-3, 20e-3, 2, 3), 0.05,
			[]CutRun{{[]int{1, 3}, 0.98}}, nil, []int{3, 1}, false},
		{"the optimal cut measured faster before: go there", gen("1f1b", 2, 4, 0), []int{2, 2}, unitCosts(4, 1e-3, 20e-3, 2, 3), 0.05,
			[]CutRun{{[]int{3, 1}, 0.5}}, nil, []int{3, 1}, true},
		{"no move is made twice", gen("1f1b", 2, 4, 0), []int{2, 2}, unitCosts(4, 1e-3, 20e-3, 2, 3), 0.05,
			nil, [][2][]int{{{2, 2}, {3, 1}}, {{3, 1}, {2, 2}}}, nil, false},
		{"no move back is made twice", gen("1f1b", 2, 4, 0), []int{2, 2}, unitCosts(4, 1e-3, 20e-3, 2, 3), 0.05,
			[]CutRun{{[]int{3, 1}, 0.5}}, [][2][]int{{{2, 2}, {3, 1}}}, nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// seen's steps are given as fractions of the current cut's.
			now, err := predictStep(tc.s, tc.cut, tc.costs)
			if err != nil {
				t.Fatal(err)
			}
			var seen []CutRun
			for _, c := range tc.seen {
				seen = append(seen, CutRun{c.Cut, c.StepS * now})
			}
			r, err := DecideRecut(tc.s, tc.cut, tc.costs, tc.threshold, RecutHistory{Ran: seen, Moves: tc.moves})
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
			if !r.Move || !slices.Equal(r.To, tc.want) || r.Back != tc.back {
				t.Errorf("move %v to %v (back %v), want a move to %v (back %v)", r.Move, r.To, r.Back, tc.want, tc.back)
			}
			if !r.Back && (!(r.AfterS < r.BeforeS) || r.Gain() <= tc.threshold) {
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
	if _, err := DecideRecut(s, []int{2, 2}, unitCosts(3, 1, 0), 0.05, RecutHistory{}); err == nil || !strings.Contains(err.Error(), "unit costs") {
		t.Errorf("costs of the wrong length: %v", err)
	}
	if _, err := DecideRecut(s, []int{1, 1, 2}, unitCosts(4, 1, 0), 0.05, RecutHistory{}); err == nil || !strings.Contains(err.Error(), "3 stages") {
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

// slowMs is the time the slowed rank takes more per block and micro-batch
// in the rebalancing tests: counted in its measured time, not burnt
// (PPLAUNCH_TEST_SLOW's ":add"), so the decisions do not depend on how busy
// the machine is; hundreds of times a tiny block's own time, it outweighs
// any scheduling noise in the medians.
const slowMs = 500

// slowed is Job.Slow for the slowed rank: half of slowMs in each of a
// block's two forward sublayers.
func slowed(_ int, pass models.Pass, _ time.Duration) time.Duration {
	if pass != models.PassF {
		return 0
	}
	return slowMs * time.Millisecond / 2
}

// trainSlowed trains cfg in process (on the backends of open; nil: the CPU)
// with slow as rank slowRank's Job.Slow, and returns rank 0's records of
// the rebalances.
func trainSlowed(t *testing.T, cfg TrainConfig, open func(int) tensor.Backend, slowRank int, slow SlowFunc) []EventRecord {
	t.Helper()
	if open == nil {
		be, err := tensor.NewCPU("")
		if err != nil {
			t.Fatal(err)
		}
		open = func(int) tensor.Backend { return be }
	}
	var moves []EventRecord
	_, errs := trainInProcessOn(t, cfg, open, func(rank int, _ <-chan struct{}, job *Job) {
		if rank == slowRank {
			job.Slow = slow
		}
		if rank == 0 {
			job.Event = func(e EventRecord) {
				if e.Record == RecordRebalance {
					moves = append(moves, e)
				}
			}
		}
	})
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	return moves
}

// blocksOn is the blocks that pipeline rank r holds under cut.
func blocksOn(cut, placement []int, r int) int {
	n := 0
	for s, b := range cut {
		if placement[s] == r {
			n += b
		}
	}
	return n
}

// TestRebalanceMatchesResume: with one pipeline rank slowed (Job.Slow),
// --rebalance every:3 moves blocks after step 3, off the slowed rank where
// it has one stage (and may move again: no move between two cuts repeats,
// and the last cut leaves the slowed rank fewer blocks than the first; with
// two stages per rank the prediction cannot tell which stages share the
// slow rank, so only the moves' numbers are checked), and the run ends with
// the parameters, bit for bit, of the same run checkpointed at each move's
// step and resumed with its cut, and of one process: for AdamW and SGD,
// tied embeddings, data-parallel replicas (only replica 0's rank slowed:
// the agreed mean still moves every replica) and interleaved stages.
func TestRebalanceMatchesResume(t *testing.T) {
	for _, tc := range []struct {
		name     string
		edit     func(*TrainConfig)
		slowRank int // world rank; its pipeline rank is slowRank % pp
		cut      []int
		off      bool // the moves take blocks off the slowed rank
	}{
		{"1f1b pp2", func(c *TrainConfig) {}, 1, []int{2, 2}, true},
		{"sgd pp2 first rank slow", func(c *TrainConfig) { c.Optimizer, c.Momentum = "sgd", 0.9 }, 0, []int{2, 2}, true},
		{"1f1b pp2 dp2", func(c *TrainConfig) { c.DP = 2 }, 1, []int{2, 2}, true},
		{"interleaved pp2 v2", func(c *TrainConfig) { c.Schedule, c.Virtual, c.Model.Layers = "interleaved", 2, 8 }, 1, []int{2, 2, 2, 2}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tiny(t)
			cfg.PP, cfg.Steps, cfg.LRDecaySteps, cfg.Warmup = 2, 9, 9, 2
			tc.edit(&cfg)
			cfg.Rebalance, cfg.RebalanceThreshold = "every:3", DefaultRebalanceThreshold
			cfg.CheckpointDir = t.TempDir()
			l, err := cfg.Plan(cfg.PP * cfg.DP)
			if err != nil {
				t.Fatal(err)
			}
			moves := trainSlowed(t, cfg, nil, tc.slowRank, slowed)
			if len(moves) == 0 || moves[0].Step != 3 || !slices.Equal(moves[0].CutBefore, tc.cut) {
				t.Fatalf("rebalances %+v, want a first one after step 3 from %v", moves, tc.cut)
			}
			slowed, pairs := tc.slowRank%cfg.PP, map[string]bool{}
			for i, mv := range moves {
				t.Logf("%s", mv.line())
				if i > 0 && !slices.Equal(mv.CutBefore, moves[i-1].Cut) {
					t.Errorf("rebalance %d starts from %v, the one before ended at %v", i, mv.CutBefore, moves[i-1].Cut)
				}
				if p := fmt.Sprint(mv.CutBefore, mv.Cut); pairs[p] {
					t.Errorf("the move %v -> %v again after step %d", mv.CutBefore, mv.Cut, mv.Step)
				} else {
					pairs[p] = true
				}
			}
			place := l.Sched.Placement
			if a, b := blocksOn(tc.cut, place, slowed), blocksOn(moves[0].Cut, place, slowed); tc.off && b >= a {
				t.Errorf("the first move left the slowed pipeline rank %d %d blocks of %d, want fewer", slowed, b, a)
			}
			if a, b := blocksOn(tc.cut, place, slowed), blocksOn(moves[len(moves)-1].Cut, place, slowed); tc.off && b >= a {
				t.Errorf("the last cut leaves the slowed pipeline rank %d %d blocks of %d, want fewer", slowed, b, a)
			}
			// The same run as resumes: to each move's step with the cut
			// before it, then on with the cut after.
			resumed := cfg
			resumed.Rebalance, resumed.CheckpointDir = RebalanceOff, t.TempDir()
			cut, from := tc.cut, 0
			for _, mv := range append(moves, EventRecord{Step: cfg.Steps}) {
				segCut := slices.Clone(cut)
				resumed.Steps, resumed.Resume = mv.Step, from > 0
				resumed.Cut = func(int) ([]int, error) { return segCut, nil }
				res, errs := trainInProcess(t, resumed, nil)
				if err := errors.Join(errs...); err != nil {
					t.Fatal(err)
				}
				if res.FirstStep != from {
					t.Fatalf("the segment to step %d started at step %d, want %d", mv.Step, res.FirstStep, from)
				}
				cut, from = mv.Cut, mv.Step
			}
			sameParams(t, cfg.CheckpointDir, resumed.CheckpointDir, "the run resumed at every move's step with its cut")
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

// TestRecutMeter: the meter puts a block's two sublayer calls together
// into one micro-batch's pass (four with recomputation's input-gradient
// pass), takes the median over the window's micro-batches, so one
// descheduled pass does not count, leaves out the warm-up step of a window
// longer than one step and anything timed between steps, and gives the
// medians per unit in model order, zero for units it did not see.
func TestRecutMeter(t *testing.T) {
	ms := time.Millisecond
	for _, recompute := range []bool{false, true} {
		m := newRecutMeter(2, recompute)
		step := func(f, i, w time.Duration, stepS float64) {
			m.begin()
			for range 2 { // two micro-batches
				for _, pass := range []models.Pass{models.PassF, models.PassI, models.PassW} {
					d := map[models.Pass]time.Duration{models.PassF: f, models.PassI: i, models.PassW: w}[pass]
					for range m.calls(1, pass) {
						m.hook(1, pass, d/time.Duration(m.calls(1, pass)), 0)
					}
				}
				m.hook(-1, models.PassF, 7*ms, 0) // the embedding: one call
			}
			m.endStep(stepS, 4)
			m.hook(1, models.PassF, time.Hour, 0) // an evaluation's forward, between steps
		}
		step(time.Second, time.Second, time.Second, 100) // the warm-up
		step(1*ms, 2*ms, 3*ms, 0.5)
		step(1*ms, 2*ms, 3*ms, 0.7)
		step(90*ms, 90*ms, 90*ms, 0.6) // descheduled: a minority of the micro-batches
		v := m.vector()                // units -1, 0, 1, 2: block 1 at index 6
		want := make([]float64, 3*4+1)
		want[0] = 7e-3
		copy(want[6:], []float64{1e-3, 2e-3, 3e-3})
		want[len(want)-1] = 0.6
		for k := range want {
			if d := v[k] - want[k]; d > 1e-12 || d < -1e-12 {
				t.Fatalf("recompute %v: vector %v, want %v", recompute, v, want)
			}
		}
		if m.since != 4 {
			t.Errorf("%d steps in the window, want 4", m.since)
		}
		m.reset(false)
		step(ms, ms, ms, 0.1)
		if v := m.vector(); v[6] != 1e-3 || v[len(v)-1] != 0.1 {
			t.Errorf("without a warm-up the first step counts: %v", v)
		}
	}
	var none *recutMeter
	none.begin()
	none.endStep(1, 1) // a run without --rebalance measures nothing
}
