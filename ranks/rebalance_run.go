package ranks

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// window is the length of the --rebalance window being measured.
func (t *trainer) window() int {
	if t.checked {
		return t.windows.every
	}
	return t.windows.first
}

// rebalanceAfter, where the window measured up to step ends, has the ranks
// agree on the measured costs, decide (DecideRecut) and, when the cut
// changes, move the blocks before the next step. It returns the move's
// record on rank 0, nil when the cut stays. final (the last step, or a
// stop) checks nothing: no step is left to gain.
func (t *trainer) rebalanceAfter(ctx context.Context, step int, final bool) (*EventRecord, error) {
	if t.meter == nil || final || !t.windows.due(t.meter.since, t.checked) {
		return nil, nil
	}
	start := t.now()
	costs, measured, err := t.agreeCosts(ctx, step)
	if err != nil {
		return nil, err
	}
	d, err := DecideRecut(t.sched, t.cut, costs, t.cfg.RebalanceThreshold, t.history)
	if err != nil {
		return nil, err
	}
	t.history.Ran = ranCut(t.history.Ran, t.cut, d.BeforeS)
	t.checked = true
	if !d.Move {
		t.meter.reset(false)
		return nil, nil
	}
	if err := t.recut(ctx, step+1, d.To); err != nil {
		return nil, err
	}
	t.meter.reset(true)
	t.history.Moves = append(t.history.Moves, [2][]int{d.From, slices.Clone(d.To)})
	rec := &EventRecord{Record: RecordRebalance, Step: step + 1, Seconds: t.now().Sub(start).Seconds(),
		CutBefore: d.From, Cut: d.To, PredictedBeforeS: d.BeforeS, PredictedS: d.AfterS, MeasuredStepS: measured, Back: d.Back}
	if d.Back {
		rec.MeasuredBackS = measuredStep(t.history.Ran, d.To)
	}
	t.logf("%s", rec.line())
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
