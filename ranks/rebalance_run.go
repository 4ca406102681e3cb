package ranks

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// rebalancer is --rebalance's state: when the ranks check the cut (the
// windows; off when the meter is nil), what the rank measured since the
// last check, whether one came before, and the cuts run and moves made so
// far.
type rebalancer struct {
	*rankJob
	windows rebalanceWindows
	meter   *recutMeter
	checked bool
	history RecutHistory
}

// window is the length of the --rebalance window being measured.
func (rb *rebalancer) window() int {
	if rb.checked {
		return rb.windows.every
	}
	return rb.windows.first
}

// after, where the window measured up to step ends, has the ranks
// agree on the measured costs, decide (DecideRecut) and, when the cut
// changes, move the blocks before the next step. It returns the move's
// record on rank 0, nil when the cut stays. final (the last step, or a
// stop) checks nothing: no step is left to gain. A move rebuilds rs's stages
// and drops sl's exchanges.
func (rb *rebalancer) after(ctx context.Context, step int, final bool, rs *rankStages, sl *stepLoop) (*EventRecord, error) {
	if rb.meter == nil || final || !rb.windows.due(rb.meter.since, rb.checked) {
		return nil, nil
	}
	start := rb.now()
	costs, measured, err := rb.agreeCosts(ctx, step)
	if err != nil {
		return nil, err
	}
	d, err := DecideRecut(rb.sched, rb.cut, costs, rb.cfg.RebalanceThreshold, rb.history)
	if err != nil {
		return nil, err
	}
	rb.history.Ran = ranCut(rb.history.Ran, rb.cut, d.BeforeS)
	rb.checked = true
	if !d.Move {
		rb.meter.reset(false)
		return nil, nil
	}
	if err := rb.recut(ctx, step+1, d.To, rs, sl); err != nil {
		return nil, err
	}
	rb.meter.reset(true)
	rb.history.Moves = append(rb.history.Moves, [2][]int{d.From, slices.Clone(d.To)})
	rec := &EventRecord{Record: RecordRebalance, Step: step + 1, Seconds: rb.now().Sub(start).Seconds(),
		CutBefore: d.From, Cut: d.To, PredictedBeforeS: d.BeforeS, PredictedS: d.AfterS, MeasuredStepS: measured, Back: d.Back}
	if d.Back {
		rec.MeasuredBackS = measuredStep(rb.history.Ran, d.To)
	}
	rb.logf("%s", rec.line())
	return rec, nil
}

// ranCut records cut's measured step in seen, replacing an older one.
func ranCut(seen []CutRun, cut []int, stepS float64) []CutRun {
	for i, r := range seen {
		if slices.Equal(r.Cut, cut) {
			seen[i].StepS = stepS
			return seen
		}
	}
	return append(seen, CutRun{Cut: slices.Clone(cut), StepS: stepS})
}

// line is a rebalance's line in the log.
func (e EventRecord) line() string {
	why := fmt.Sprintf("predicted step %.4gs -> %.4gs, %+.1f%%", e.PredictedBeforeS, e.PredictedS, 100*(e.PredictedS-e.PredictedBeforeS)/e.PredictedBeforeS)
	if e.Back {
		why = fmt.Sprintf("back: step %.4gs there, %.4gs here, simulated with the block times measured on each", e.MeasuredBackS, e.PredictedBeforeS)
	}
	return fmt.Sprintf("rebalance after step %d: --layers-per-stage %s -> %s (%s; measured step %.4gs; moved in %.3gs)",
		e.Step, joinCut(e.CutBefore), joinCut(e.Cut), why, e.MeasuredStepS, e.Seconds)
}

// joinCut writes a cut as --layers-per-stage takes it.
func joinCut(cut []int) string {
	s := make([]string, len(cut))
	for i, n := range cut {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, ",")
}
