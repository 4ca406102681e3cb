package bench

import (
	"fmt"
	"math"
	"slices"

	"github.com/pplaunch/pplaunch/plan"
	"github.com/pplaunch/pplaunch/ranks"
)

// ScalingRun is what one size's train run left: its step records
// (train --metrics) and its profile (train --profile), and how it ran.
type ScalingRun struct {
	Size      ScalingSize
	Schedule  string // a schedule name; a schedule file gets no prediction
	Virtual   int
	Recompute bool
	Records   []ranks.StepRecord
	Profile   *plan.Profile
	// Warmup is the records left out first; Measured the records used
	// after them (the run's last step comes after those and is left out
	// too: the end of a run, its final evaluation and checkpoint, is not
	// what a scaling row measures, though their times are no longer in
	// the step's).
	Warmup, Measured int
}

// Row summarises the run's measured steps: means per step, the step split
// per rank into compute, transfer and idle time, and the simulator's step
// for the run's own profiled costs. Efficiency is left to SetEfficiency.
func (r ScalingRun) Row() (ScalingRow, error) {
	if r.Warmup < 0 || r.Measured < 1 || len(r.Records) < r.Warmup+r.Measured {
		return ScalingRow{}, fmt.Errorf("world %d: %d step records, want %d warm-up and %d measured", r.Size.World, len(r.Records), r.Warmup, r.Measured)
	}
	recs := r.Records[r.Warmup : r.Warmup+r.Measured]
	row := ScalingRow{ScalingSize: r.Size, Schedule: r.Schedule, Steps: len(recs), PeakKind: "rss"}
	var tokens, tail float64 // tail: the update and reductions after the pipeline
	var latencies []float64
	for _, rec := range recs {
		if w := r.Size.World; len(rec.ComputeS) != w || len(rec.ReduceS) != w || len(rec.OptimizerS) != w || len(rec.TransferWaitS) != w {
			return ScalingRow{}, fmt.Errorf("world %d: step %d has per-rank times for %d ranks; its metrics come from another world or an older pplaunch", r.Size.World, rec.Step, len(rec.ComputeS))
		}
		tokens += rec.TokensPerS * rec.StepS
		row.StepS += rec.StepS
		row.BubbleMeasured += rec.BubbleMeasured
		row.BubblePredicted += rec.BubblePredicted
		c, x, i := split(rec)
		row.ComputeS, row.TransferS, row.IdleS = row.ComputeS+c, row.TransferS+x, row.IdleS+i
		tail += slices.Max(rec.OptimizerS) + slices.Min(rec.ReduceS)
		if rec.MessageS > 0 {
			latencies = append(latencies, rec.MessageS)
		}
		row.peak(rec)
	}
	n := float64(len(recs))
	for _, v := range []*float64{&row.StepS, &row.BubbleMeasured, &row.BubblePredicted, &row.ComputeS, &row.TransferS, &row.IdleS, &tail} {
		*v /= n
	}
	if row.StepS <= 0 {
		return ScalingRow{}, fmt.Errorf("world %d: mean step time %v", r.Size.World, row.StepS)
	}
	row.TokensPerS = tokens / n / row.StepS
	row.TransferShare = row.TransferS / row.StepS
	latency := 0.0
	if len(latencies) > 0 {
		latency = median(latencies)
	}
	if pipe, ok := r.predictPipeline(latency); ok {
		row.PredictedStepS = pipe + tail
	}
	return row, nil
}

// split is one step's compute, transfer and idle time, means over the
// ranks. A rank's compute is its passes and optimizer update; its transfer
// is the time its computes waited for messages on the wire (after the peer
// had sent them) and the reductions after the pipeline (their time on the
// rank that waited least: the others also waited there for the slowest);
// idle is the rest (the bubble, waiting for a peer's compute).
func split(rec ranks.StepRecord) (compute, transfer, idle float64) {
	reduce := slices.Min(rec.ReduceS)
	for r := range rec.ComputeS {
		c := min(rec.ComputeS[r]+rec.OptimizerS[r], rec.StepS)
		x := min(rec.TransferWaitS[r]+reduce, rec.StepS-c)
		compute += c
		transfer += x
		idle += rec.StepS - c - x
	}
	n := float64(len(rec.ComputeS))
	return compute / n, transfer / n, idle / n
}

// peak keeps the most memory one rank held: the device allocator's peak
// where the run had devices, else the resident set size.
func (row *ScalingRow) peak(rec ranks.StepRecord) {
	if len(rec.PeakDevice) > 0 {
		if row.PeakKind != "device" {
			row.PeakKind, row.PeakBytes = "device", 0
		}
		row.PeakBytes = max(row.PeakBytes, slices.Max(rec.PeakDevice))
		return
	}
	if row.PeakKind == "rss" && len(rec.RSS) > 0 {
		row.PeakBytes = max(row.PeakBytes, slices.Max(rec.RSS))
	}
}

// predictPipeline is the simulator's pipeline makespan for the run's layout
// with the profile's per-block costs and transfers of latency seconds each
// (the profile's own transfer times when 0); false without a profile or
// for a schedule given as a file.
func (r ScalingRun) predictPipeline(latency float64) (float64, bool) {
	if r.Profile == nil {
		return 0, false
	}
	p := *r.Profile
	if latency > 0 {
		p.Boundaries = slices.Clone(p.Boundaries)
		for i := range p.Boundaries {
			if !p.Boundaries[i].Local {
				p.Boundaries[i].Forward, p.Boundaries[i].Backward = latency, latency
			}
		}
	}
	pr, err := plan.Predict(&p, plan.Candidate{PP: r.Size.PP, DP: r.Size.DP, Schedule: r.Schedule, Virtual: r.Virtual,
		Micro: r.Size.Micro, MicroSize: r.Size.MicroSize, Recompute: r.Recompute, Cut: p.Layout.Cut})
	if err != nil || math.IsNaN(pr.PipelineS) {
		return 0, false
	}
	return pr.PipelineS, true
}

// SetEfficiency sets every row's tokens/s per rank against the first's.
func SetEfficiency(rows []ScalingRow) {
	if len(rows) == 0 || rows[0].TokensPerS <= 0 {
		return
	}
	base := rows[0].TokensPerS / float64(rows[0].World)
	for i := range rows {
		rows[i].Efficiency = rows[i].TokensPerS / float64(rows[i].World) / base
	}
}
