package report

import (
	"fmt"
	"os"
	"time"

	"github.com/pplaunch/pplaunch/contract"
	"github.com/pplaunch/pplaunch/ranks"
	"github.com/pplaunch/pplaunch/schedules"
)

// Finish ends a run that trained as asked (or stopped when preempted):
// it writes the profile, closes --metrics, writes the trace files, marks the
// live view finished and prints the summary and the files written. sig is
// the preemption signal rank 0 received, if any.
func (r *Run) Finish(res *ranks.Result, sig os.Signal) error {
	if res.Profile != nil {
		if err := writeProfile(r.cfg.Profile, res.Profile); err != nil {
			return fmt.Errorf("train: --profile: %w", err)
		}
	}
	if err := r.lines.finish(); err != nil {
		return fmt.Errorf("train: --metrics: %w", err)
	}
	if err := r.finishTrace(res.FirstStep); err != nil {
		return fmt.Errorf("train: %w", err)
	}
	if r.prom != nil {
		outcome := fmt.Sprintf("finished: steps %d..%d in %.1f s", res.FirstStep+1, res.Steps, time.Since(r.start).Seconds())
		if res.Stopped {
			outcome = fmt.Sprintf("stopped after step %d of %d (preempted): continue with --resume", res.Steps, r.cfg.Train.Steps)
		}
		r.prom.close(outcome, true)
		r.prom = nil
	}
	stoppedBy := "a preemption signal to another rank"
	if sig != nil {
		stoppedBy = contract.SignalName(sig)
	}
	if !res.WriteSummary(r.cfg.Out, time.Since(r.start), r.cfg.Train.Steps, stoppedBy) {
		return nil
	}
	for _, f := range []string{r.cfg.Metrics, r.cfg.Trace, r.cfg.TraceSVG} {
		if f != "" {
			fmt.Fprintf(r.cfg.Out, "  wrote %s\n", f)
		}
	}
	return nil
}

// finishTrace ends the trace and draws --trace-svg from it, beside the
// timeline the run's schedule expects; first is the step the run resumed
// after.
func (r *Run) finishTrace(first int) error {
	if r.trace == nil {
		return nil
	}
	t := r.cfg.Train
	title := fmt.Sprintf("measured: %s, pp %d × dp %d, %d micro-batches", t.Schedule, t.PP, t.DP, t.Micro)
	var sched *schedules.Schedule // for the steps and the expected timeline
	if l, err := t.Plan(r.cfg.World); err == nil {
		sched = l.Sched
	}
	win, err := ParseTraceSteps(r.cfg.TraceSteps)
	if err != nil {
		return err
	}
	return r.trace.finish(r.cfg.TraceSVG, title, sched, win, first)
}
