package ranks

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/pplaunch/pplaunch/models"
	"github.com/pplaunch/pplaunch/schedules"
)

// Live rebalancing (TrainConfig.Rebalance, --rebalance): the ranks time
// their blocks' passes while they train (rebalance_meter.go), agree on the
// times by an all-reduce, and at a step boundary cut the model again where
// the optimal cut (models.PartitionCosts, the planner's DP) predicts a step
// shorter by more than the threshold; the blocks then move between the
// ranks (rebalance_move.go). The decision is this file's, pure: every rank
// makes it from the same numbers, so every rank makes the same one.

// The --rebalance modes besides every:N.
const (
	RebalanceOff  = "off"
	RebalanceAuto = "auto"
)

// DefaultRebalanceThreshold is the predicted step gain below which the cut
// stays: 5% of the step.
const DefaultRebalanceThreshold = 0.05

// rebalanceAutoFirst and rebalanceAutoEvery are auto's windows: a first
// check soon after the start (its first step a warm-up), then a slow cadence
// that follows drift without paying a check every few steps.
const (
	rebalanceAutoFirst = 4
	rebalanceAutoEvery = 20
)

// rebalanceWindows is --rebalance parsed: the steps measured before the
// first check, and between later ones; zero: off.
type rebalanceWindows struct{ first, every int }

// parseRebalance reads --rebalance: off (or empty), auto, or every:N.
func parseRebalance(s string) (rebalanceWindows, error) {
	switch s {
	case "", RebalanceOff:
		return rebalanceWindows{}, nil
	case RebalanceAuto:
		return rebalanceWindows{rebalanceAutoFirst, rebalanceAutoEvery}, nil
	}
	if v, ok := strings.CutPrefix(s, "every:"); ok {
		n, err := strconv.Atoi(v)
		if err == nil && n >= 1 {
			return rebalanceWindows{n, n}, nil
		}
	}
	return rebalanceWindows{}, fmt.Errorf("--rebalance %q: want off, auto, or every:N with N a number of steps of 1 or more (e.g. every:50)", s)
}

// on says whether the ranks ever check the cut.
func (w rebalanceWindows) on() bool { return w.every > 0 }

// due says whether the window that has measured since steps (counted from
// its start: the run's first step, or the step after the last check) ends
// here; checked is whether a check came before in this run.
func (w rebalanceWindows) due(since int, checked bool) bool {
	if !w.on() {
		return false
	}
	if checked {
		return since >= w.every
	}
	return since >= w.first
}

// UnitCost is one model unit's measured seconds for one micro-batch: its
// forward, input-gradient and weight-gradient passes.
type UnitCost struct{ F, I, W float64 }

// CutRun is a cut the run has trained with and its measured step: the
// schedule simulated with the block times measured while it ran, the last
// time it did (medians over micro-batches, so steadier than the wall clock
// of a busy machine, and true for that cut, whose blocks ran where it put
// them).
type CutRun struct {
	Cut   []int
	StepS float64
}

// RecutHistory is what the run has done so far: the cuts it trained with
// before the current window and the moves it made, each as its cut before
// and after.
type RecutHistory struct {
	Ran   []CutRun
	Moves [][2][]int
}

// moved says whether the run has moved from cut from to cut to before.
func (h RecutHistory) moved(from, to []int) bool {
	for _, m := range h.Moves {
		if slices.Equal(m[0], from) && slices.Equal(m[1], to) {
			return true
		}
	}
	return false
}

// Recut is what DecideRecut makes of the measured costs: the cut now, the
// one to go to (the optimal one, or a cut measured faster), the predicted
// step (the schedule's simulated makespan) of each, and whether the ranks
// move; Back says the move returns to a cut the run measured faster than
// this one.
type Recut struct {
	From, To        []int
	BeforeS, AfterS float64
	Move, Back      bool
}

// Gain is the predicted step's fall as a fraction of the step now.
func (r Recut) Gain() float64 {
	if r.BeforeS <= 0 {
		return 0
	}
	return (r.BeforeS - r.AfterS) / r.BeforeS
}

// DecideRecut decides whether to leave cut (blocks per stage of schedule s)
// for the cut that minimises the slowest stage's measured cost
// (models.PartitionCosts over costs, one per unit: the embedding, every
// block, the head): only when that cut differs and the schedule's simulated
// step with it is shorter by more than threshold (a fraction of the step).
//
// A unit is taken to cost what it was measured to cost wherever it runs,
// which a rank slower than the others breaks: its blocks look slow, a block
// it takes looks fast until it runs there. The prediction for the current
// cut is right (its blocks ran where it puts them), so it is the current
// cut's measured step, and the measurements of the cuts run before (h.Ran)
// overrule the prediction: when one of them ran faster than the current cut
// by more than threshold,
// the ranks go back to the fastest; a cut that ran no faster than the
// current one by threshold is not tried again. And no move from one cut to
// another is made twice (h.Moves), so the ranks do not move back and forth
// on a machine whose step times are noisy: the run makes at most two moves
// between any two cuts, one each way.
func DecideRecut(s *schedules.Schedule, cut []int, costs []UnitCost, threshold float64, h RecutHistory) (Recut, error) {
	seen := h.Ran
	layers := 0
	for _, n := range cut {
		layers += n
	}
	if len(cut) != s.Stages() {
		return Recut{}, fmt.Errorf("rebalance: a cut of %d stages for a schedule of %d", len(cut), s.Stages())
	}
	total := make([]float64, len(costs))
	for i, c := range costs {
		total[i] = c.F + c.I + c.W
	}
	best, err := models.PartitionCosts(layers, len(cut), total)
	if err != nil {
		return Recut{}, fmt.Errorf("rebalance: %w", err)
	}
	r := Recut{From: slices.Clone(cut), To: best}
	if r.BeforeS, err = predictStep(s, cut, costs); err != nil {
		return Recut{}, err
	}
	now, fastest := r.BeforeS, -1
	for i, c := range seen {
		if !slices.Equal(c.Cut, cut) && c.StepS < now*(1-threshold) && (fastest < 0 || c.StepS < seen[fastest].StepS) {
			fastest = i
		}
	}
	if fastest >= 0 {
		r.To, r.Move, r.Back = slices.Clone(seen[fastest].Cut), true, true
	}
	if r.AfterS, err = predictStep(s, r.To, costs); err != nil {
		return Recut{}, err
	}
	if !r.Back {
		ran := measuredStep(seen, best)
		r.Move = !slices.Equal(best, cut) && r.Gain() > threshold && !(ran > 0 && ran >= now*(1-threshold))
	}
	if r.Move && h.moved(cut, r.To) {
		r.Move, r.Back = false, false
	}
	return r, nil
}

// measuredStep is the measured step of cut among seen, 0 when it has not run.
func measuredStep(seen []CutRun, cut []int) float64 {
	for _, r := range seen {
		if slices.Equal(r.Cut, cut) {
			return r.StepS
		}
	}
	return 0
}

// predictStep is the simulated makespan of schedule s's step with cut and
// the units' costs (transfers left out: the cut moves compute, and every
// boundary carries the same activation whatever the cut).
func predictStep(s *schedules.Schedule, cut []int, costs []UnitCost) (float64, error) {
	sc := schedules.Costs{Stages: map[int]schedules.StageCost{}}
	unit := 0 // index in costs: 0 the embedding
	for st, n := range cut {
		var c schedules.StageCost
		add := func(u UnitCost) { c.F, c.I, c.W = c.F+u.F, c.I+u.I, c.W+u.W }
		if st == 0 {
			add(costs[0])
		}
		for range n {
			unit++
			add(costs[unit])
		}
		if st == len(cut)-1 {
			add(costs[len(costs)-1])
		}
		c.B = c.I + c.W
		sc.Stages[st] = c
	}
	tl, err := schedules.Simulate(s, sc)
	if err != nil {
		return 0, fmt.Errorf("rebalance: simulate cut %v: %w", cut, err)
	}
	stats, err := schedules.Analyze(s, tl, nil)
	if err != nil {
		return 0, fmt.Errorf("rebalance: simulate cut %v: %w", cut, err)
	}
	return stats.Makespan, nil
}

// checkRebalance checks the rebalancing options against the rest of the
// run: what a live move cannot carry yet is refused here, before any rank
// starts, with what to change.
func (c *TrainConfig) checkRebalance(dp int) error {
	w, err := parseRebalance(c.Rebalance)
	if err != nil {
		return err
	}
	if c.RebalanceThreshold < 0 || c.RebalanceThreshold >= 1 || c.RebalanceThreshold != c.RebalanceThreshold {
		return fmt.Errorf("--rebalance-threshold %g: want a fraction of the step in [0, 1) (0.05: move when the predicted step is 5%% shorter)", c.RebalanceThreshold)
	}
	if !w.on() {
		return nil
	}
	switch {
	case c.Zero == 1 && dp > 1:
		return fmt.Errorf("--rebalance %s with --zero 1 and --dp %d: a live move does not carry optimizer state sharded over the replicas; use --zero 0, or rebalance offline (train --profile, then --balance profile:FILE)", c.Rebalance, dp)
	case c.Profile:
		return fmt.Errorf("--rebalance %s with --profile: a profile measures one fixed cut; drop --rebalance to profile, or --profile to rebalance", c.Rebalance)
	}
	return nil
}
