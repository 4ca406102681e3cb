package ranks

import (
	"context"
	"fmt"
	"math"
	"syscall"
	"time"

	"github.com/pplaunch/pplaunch/collective"
	"github.com/pplaunch/pplaunch/schedules"
)

// StepRecord is one step as rank 0 reports it (--metrics writes it as a JSON line).
type StepRecord struct {
	Step             int       `json:"step"`
	Loss             float64   `json:"loss"`
	ValLoss          *float64  `json:"val_loss"`
	TokensPerS       float64   `json:"tokens_per_s"`
	StepS            float64   `json:"step_s"`
	BubbleMeasured   float64   `json:"bubble_measured"`
	BubblePredicted  float64   `json:"bubble_predicted"`
	PeakActivation   []int64   `json:"peak_activation_bytes"`
	PeakMicroBatches []float64 `json:"peak_activation_microbatches"`
	GradNorm         float64   `json:"grad_norm"`
	// CPUS is each rank's process CPU time (user + system) in the step: on a
	// shared machine it shows the work done, whatever the wall time.
	CPUS []float64 `json:"cpu_s"`
	LR   float64   `json:"lr"`
	// Timeline is the measured step of every rank, seconds on rank 0's clock
	// since the job's origin (for --trace); not written to the metrics.
	Timeline *schedules.Timeline `json:"-"`
}

// reportHead is the report message's header: start, peak bytes, bytes per
// micro-batch, CPU seconds; the spans follow, two values each.
const reportHead = 4

// cpuTime is the process's CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// report sends this rank's measured step to rank 0, which puts together the
// record: measured and predicted bubble (replica 0's pipeline) and every
// rank's peak activation bytes. Times travel on rank 0's clock.
func (t *trainer) report(ctx context.Context, step int, sr *StepResult, cpuS float64) (*StepRecord, error) {
	enc := func(rank int, sr *StepResult) []float64 {
		list := t.sched.Ranks[rank%t.cfg.PP]
		v := make([]float64, reportHead+2*len(list))
		var perMB int64
		for _, n := range sr.PerMB {
			perMB += n
		}
		v[0] = sr.Start.Add(t.offset).Sub(t.origin).Seconds()
		v[1], v[2], v[3] = float64(sr.Peak), float64(perMB), cpuS
		for i, sp := range sr.Spans {
			v[reportHead+2*i], v[reportHead+1+2*i] = sp.Start, sp.End
		}
		return v
	}
	tag := collective.Tag{Kind: collective.Control, Chunk: chunkReport, Step: uint32(step)}
	wctx, cancel := t.waitCtx(ctx)
	defer cancel()
	if t.job.Rank != 0 {
		buf := enc(t.job.Rank, sr)
		if err := t.job.Comm.Send(wctx, 0, tag, collective.F64(buf)); err != nil {
			return nil, fmt.Errorf("step %d: report to rank 0: %w", step, err)
		}
		return nil, nil
	}
	all := make([][]float64, t.job.Size)
	all[0] = enc(0, sr)
	var ops []collective.Op
	for r := 1; r < t.job.Size; r++ {
		all[r] = make([]float64, reportHead+2*len(t.sched.Ranks[r%t.cfg.PP]))
		ops = append(ops, collective.RecvOp(r, tag, collective.F64(all[r])))
	}
	if len(ops) > 0 {
		if err := t.job.Comm.Batch(ops...).Wait(wctx); err != nil {
			return nil, fmt.Errorf("step %d: reports from the ranks: %w", step, err)
		}
	}
	rec := &StepRecord{Step: step, PeakActivation: make([]int64, t.job.Size), PeakMicroBatches: make([]float64, t.job.Size), CPUS: make([]float64, t.job.Size)}
	abs := &schedules.Timeline{Ranks: make([][]schedules.Span, t.job.Size)}
	for r, v := range all {
		rec.PeakActivation[r] = int64(v[1])
		rec.CPUS[r] = v[3]
		if v[2] > 0 {
			rec.PeakMicroBatches[r] = v[1] / v[2]
		}
		list := t.sched.Ranks[r%t.cfg.PP]
		for i, a := range list {
			abs.Ranks[r] = append(abs.Ranks[r], schedules.Span{Action: a, Start: v[0] + v[reportHead+2*i], End: v[0] + v[reportHead+1+2*i]})
		}
	}
	rec.Timeline = abs
	// Replica 0's pipeline, from its earliest start.
	pipe := &schedules.Timeline{Ranks: make([][]schedules.Span, t.cfg.PP)}
	t0 := math.Inf(1)
	for p := range t.cfg.PP {
		t0 = min(t0, all[p][0])
	}
	for p := range t.cfg.PP {
		for _, sp := range abs.Ranks[p] {
			sp.Start -= t0
			sp.End -= t0
			pipe.Ranks[p] = append(pipe.Ranks[p], sp)
		}
	}
	if st, err := schedules.Analyze(t.sched, pipe, nil); err == nil {
		rec.BubbleMeasured = st.Bubble
	} else {
		return nil, fmt.Errorf("step %d: measured timeline: %w", step, err)
	}
	costs, err := schedules.MeanCosts(t.sched, pipe)
	if err != nil {
		return nil, fmt.Errorf("step %d: measured costs: %w", step, err)
	}
	sim, err := schedules.Simulate(t.sched, costs)
	if err != nil {
		return nil, fmt.Errorf("step %d: simulation of measured costs: %w", step, err)
	}
	st, err := schedules.Analyze(t.sched, sim, nil)
	if err != nil {
		return nil, fmt.Errorf("step %d: simulated timeline: %w", step, err)
	}
	rec.BubblePredicted = st.Bubble
	return rec, nil
}
