package ranks

import (
	"context"
	"fmt"
	"math"
	"syscall"
	"time"

	"github.com/pplaunch/pplaunch/ranks/stageloop"

	"github.com/pplaunch/pplaunch/collective"
	"github.com/pplaunch/pplaunch/schedules"
)

// StepRecord is one step as rank 0 reports it (--metrics writes it as a JSON line).
type StepRecord struct {
	// Record is "step" (RecordStep), telling the step's line of --metrics
	// from the evaluations' and checkpoints' (EventRecord).
	Record string `json:"record"`
	// Step counts from 1, as the console and the checkpoints do: the
	// record of step 1 is the first optimizer step's.
	Step int     `json:"step"`
	Loss float64 `json:"loss"`
	// ValLoss is the evaluation's after this step, if there was one; its
	// time is in the evaluation's own record, not in StepS.
	ValLoss         *float64 `json:"val_loss"`
	TokensPerS      float64  `json:"tokens_per_s"`
	StepS           float64  `json:"step_s"`
	BubbleMeasured  float64  `json:"bubble_measured"`
	BubblePredicted float64  `json:"bubble_predicted"`
	// PipelineS is replica 0's pipeline makespan, from its first compute
	// start to its last compute end; PredictedPipelineS is the simulator's
	// for the step's mean action times with free transfers.
	PipelineS          float64 `json:"pipeline_s"`
	PredictedPipelineS float64 `json:"predicted_pipeline_s"`
	// ComputeS is each rank's time in compute actions (forward and
	// backward passes) in the step, ReduceS in the reductions after the
	// pipeline (replicas' gradients, tied embedding, loss and norm, and
	// under ZeRO stage 1 the parameters' all-gather: a rank that finished
	// early waits there for the others), OptimizerS in the optimizer update.
	ComputeS   []float64 `json:"compute_s"`
	ReduceS    []float64 `json:"reduce_s"`
	OptimizerS []float64 `json:"optimizer_s"`
	// TransferWaitS is each rank's time waiting for messages on the wire:
	// of the gaps before its computes, the part after the peer sent the
	// input (the part before is the bubble). MessageS is the median time
	// of one message from its send to its arrival, over those a waiting
	// rank saw arrive (0 when no rank waited for one).
	TransferWaitS    []float64 `json:"transfer_wait_s"`
	MessageS         float64   `json:"message_latency_s"`
	PeakActivation   []int64   `json:"peak_activation_bytes"`
	PeakMicroBatches []float64 `json:"peak_activation_microbatches"`
	// PeakDevice is each rank's most device memory held by tensors in the
	// step (the allocator's peak since the step began; absent on the CPU).
	PeakDevice []int64 `json:"peak_device_bytes,omitempty"`
	GradNorm   float64 `json:"grad_norm"`
	// CPUS is each rank's process CPU time (user + system) in the step: on a
	// shared machine it shows the work done, whatever the wall time.
	CPUS []float64 `json:"cpu_s"`
	LR   float64   `json:"lr"`
	// RSS is each rank's resident set size at the end of its step.
	RSS []int64 `json:"rss_bytes"`
	// OptimizerBytes is each rank's optimizer state (AdamW's moments, SGD's
	// momentum) as allocated after its step: divided by dp under ZeRO stage 1.
	OptimizerBytes []int64 `json:"optimizer_state_bytes"`
	// Transfers are the activations and gradients each rank sent to and
	// received from each peer in the step, with the time its transfer
	// actions took (see transfers).
	Transfers []PeerTraffic `json:"transfers,omitempty"`
	// Timeline is the measured step of every rank, seconds on rank 0's clock
	// since the job's origin (for --trace); not written to the metrics.
	Timeline *schedules.Timeline `json:"-"`
}

// reporter is what rank 0 emits about the run: the step records (every
// rank's measured step, put together on rank 0), the evaluations' and
// checkpoints' records after them, and with --profile the profile; and the
// rank's clock against rank 0's (clock.go), which every record is timed on.
type reporter struct {
	*rankJob
	rankClock
	prof *profiler // nil unless TrainConfig.Profile
}

// rankClock is the rank's clock against rank 0's (clock.go), for the
// merged timeline.
type rankClock struct {
	origin time.Time
	offset time.Duration // add to this rank's clock to get rank 0's
}

// reportHead is the report message's header: start, peak bytes, bytes per
// micro-batch, CPU seconds, peak device bytes (-1 without a device), RSS
// bytes, reduction seconds, optimizer seconds, optimizer state bytes; the
// spans follow, two values each.
const reportHead = 9

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
func (rp *reporter) report(ctx context.Context, step int, o stepOutcome, optimBytes int64) (*StepRecord, error) {
	tag := collective.Tag{Kind: collective.Control, Chunk: chunkReport, Step: uint32(step)}
	wctx, cancel := rp.waitCtx(ctx)
	defer cancel()
	if rp.job.Rank != 0 {
		if err := rp.job.Comm.Send(wctx, 0, tag, collective.F64(rp.encodeReport(o, optimBytes))); err != nil {
			return nil, fmt.Errorf("step %d: report to rank 0: %w", step, err)
		}
		return nil, nil
	}
	all := make([][]float64, rp.job.Size)
	all[0] = rp.encodeReport(o, optimBytes)
	var ops []collective.Op
	for r := 1; r < rp.job.Size; r++ {
		all[r] = make([]float64, reportHead+2*len(rp.sched.Ranks[r%rp.cfg.PP]))
		ops = append(ops, collective.RecvOp(r, tag, collective.F64(all[r])))
	}
	if len(ops) > 0 {
		if err := rp.job.Comm.Batch(ops...).Wait(wctx); err != nil {
			return nil, fmt.Errorf("step %d: reports from the ranks: %w", step, err)
		}
	}
	rec := rp.record(step, all)
	if err := rp.bubbles(rec, all); err != nil {
		return nil, fmt.Errorf("step %d: %w", step, err)
	}
	return rec, nil
}

// encodeReport is this rank's report message: the header, then every
// span's start and end.
func (rp *reporter) encodeReport(o stepOutcome, optimBytes int64) []float64 {
	sr := o.sr
	v := make([]float64, reportHead+2*len(sr.Spans))
	var perMB int64
	for _, n := range sr.PerMB {
		perMB += n
	}
	v[0] = sr.Start.Add(rp.offset).Sub(rp.origin).Seconds()
	v[1], v[2], v[3], v[4] = float64(sr.Peak), float64(perMB), o.cpuS, -1
	if m, ok := rp.job.Compute.DeviceMemory(); ok {
		v[4] = float64(m.Peak)
	}
	v[5], v[6], v[7], v[8] = float64(rssBytes()), o.reduceS, o.optimS, float64(optimBytes)
	for i, sp := range sr.Spans {
		v[reportHead+2*i], v[reportHead+1+2*i] = sp.Start, sp.End
	}
	return v
}

// record is the step's record from every rank's report, with the timeline
// of every rank on rank 0's clock.
func (rp *reporter) record(step int, all [][]float64) *StepRecord {
	n := rp.job.Size
	rec := &StepRecord{Record: RecordStep, Step: step + 1, PeakActivation: make([]int64, n), PeakMicroBatches: make([]float64, n), CPUS: make([]float64, n),
		RSS: make([]int64, n), ComputeS: make([]float64, n), ReduceS: make([]float64, n), OptimizerS: make([]float64, n),
		OptimizerBytes: make([]int64, n)}
	abs := &schedules.Timeline{Ranks: make([][]schedules.Span, n)}
	for r, v := range all {
		rec.PeakActivation[r] = int64(v[1])
		rec.CPUS[r] = v[3]
		if v[4] >= 0 {
			if rec.PeakDevice == nil {
				rec.PeakDevice = make([]int64, rp.job.Size)
			}
			rec.PeakDevice[r] = int64(v[4])
		}
		rec.RSS[r], rec.ReduceS[r], rec.OptimizerS[r], rec.OptimizerBytes[r] = int64(v[5]), v[6], v[7], int64(v[8])
		if v[2] > 0 {
			rec.PeakMicroBatches[r] = v[1] / v[2]
		}
		list := rp.sched.Ranks[r%rp.cfg.PP]
		abs.Ranks[r] = make([]schedules.Span, len(list))
		for i, a := range list {
			sp := schedules.Span{Action: a, Start: v[0] + v[reportHead+2*i], End: v[0] + v[reportHead+1+2*i]}
			abs.Ranks[r][i] = sp
			if a.Kind.IsCompute() {
				rec.ComputeS[r] += sp.End - sp.Start
			}
		}
	}
	rec.Timeline = abs
	m := rp.cfg.Model
	rec.Transfers = transfers(rp.sched, rp.cfg.PP, abs, int64(rp.cfg.MicroSize*m.Seq*m.Width*rp.cfg.Precision.ActivationBytes()))
	rec.TransferWaitS, rec.MessageS = waitTimes(rp.sched, rp.cfg.PP, abs)
	return rec
}

// bubbles sets the measured bubble of replica 0's pipeline (from its
// earliest start) and the one the simulator predicts from its mean action
// times.
func (rp *reporter) bubbles(rec *StepRecord, all [][]float64) error {
	pipe := &schedules.Timeline{Ranks: make([][]schedules.Span, rp.cfg.PP)}
	t0 := math.Inf(1)
	for p := range rp.cfg.PP {
		t0 = min(t0, all[p][0])
	}
	for p := range rp.cfg.PP {
		for _, sp := range rec.Timeline.Ranks[p] {
			sp.Start -= t0
			sp.End -= t0
			pipe.Ranks[p] = append(pipe.Ranks[p], sp)
		}
	}
	st, err := schedules.Analyze(rp.sched, pipe, nil)
	if err != nil {
		return fmt.Errorf("measured timeline: %w", err)
	}
	rec.BubbleMeasured, rec.PipelineS = st.Bubble, st.Makespan
	costs, err := schedules.MeanCosts(rp.sched, pipe)
	if err != nil {
		return fmt.Errorf("measured costs: %w", err)
	}
	sim, err := schedules.Simulate(rp.sched, costs)
	if err != nil {
		return fmt.Errorf("simulation of measured costs: %w", err)
	}
	if st, err = schedules.Analyze(rp.sched, sim, nil); err != nil {
		return fmt.Errorf("simulated timeline: %w", err)
	}
	rec.BubblePredicted, rec.PredictedPipelineS = st.Bubble, st.Makespan
	return nil
}

// publish sends this rank's measured step to rank 0, which completes the
// record (loss, validation loss, norm, rate, time, throughput), adds it to the
// summary and the profile, and hands it to Job.Report, then the evaluation's
// and checkpoint's records after it to Job.Event. optimBytes is the
// optimizer state the rank's stages hold now.
func (rp *reporter) publish(ctx context.Context, step int, o stepOutcome, events []EventRecord, res *Result, optimBytes int64) error {
	c := rp.cfg
	rec, err := rp.report(ctx, step, o, optimBytes)
	if err != nil || rp.job.Rank != 0 {
		return err
	}
	rec.Loss, rec.GradNorm, rec.LR = o.loss, o.norm, o.lr
	for _, e := range events {
		if e.Record == RecordEval {
			rec.ValLoss = e.ValLoss
		}
	}
	rec.StepS = o.stepS
	rec.TokensPerS = float64(c.DP*c.Micro*c.MicroSize*c.Model.Seq) / o.stepS
	res.Summary.Add(*rec)
	if rp.prof != nil {
		rp.prof.record(rp.sched, rec)
	}
	if rp.job.Report != nil {
		rp.job.Report(*rec)
	}
	if rp.job.Event != nil {
		for _, e := range events {
			rp.job.Event(e)
		}
	}
	return nil
}

// endStep closes the profiler's step (nothing without --profile).
func (rp *reporter) endStep(sr *stageloop.StepResult) {
	if rp.prof != nil {
		rp.prof.endStep(sr)
	}
}
