package ranks

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/pplaunch/pplaunch/ranks/stageloop"

	"github.com/pplaunch/pplaunch/collective"
	"github.com/pplaunch/pplaunch/models"
	"github.com/pplaunch/pplaunch/plan"
	"github.com/pplaunch/pplaunch/schedules"
)

// chunkProfile tags the profile measurements a pipeline rank sends rank 0.
const chunkProfile = 0xFFF3

// unitFields is the number of values per unit in profileVector.
const unitFields = 5

// profiler collects one rank's measurements for --profile: per unit and
// pass the time of each step's micro-batches (through the stages' Timing
// hooks), per stage the bytes a micro-batch keeps, the rank's peak, and on
// rank 0 the transfers of replica 0's pipeline and the step times.
type profiler struct {
	micro  int                 // micro-batches per step
	warmup int                 // steps left out first
	steps  int                 // steps seen
	cur    map[int]*[3]float64 // unit -> this step's summed seconds per pass
	saved  map[int]*[2]int64   // unit -> this step's summed bytes kept after F and after I
	times  map[int]*[3][]float64
	bytes  map[int][2]int64
	perMB  map[int]int64
	peak   int64
	xfer   map[[2]int][]float64 // (boundary, 0 forward / 1 backward) -> seconds per transfer
	stepS  []float64
}

func newProfiler(micro, steps int) *profiler {
	return &profiler{micro: micro, warmup: min(1, steps-1), cur: map[int]*[3]float64{}, saved: map[int]*[2]int64{},
		times: map[int]*[3][]float64{}, bytes: map[int][2]int64{}, perMB: map[int]int64{}, xfer: map[[2]int][]float64{}}
}

// hook is the stages' Timing hook.
func (p *profiler) hook(unit int, pass models.Pass, d time.Duration, saved int64) {
	c := p.cur[unit]
	if c == nil {
		c = &[3]float64{}
		p.cur[unit] = c
	}
	c[pass] += d.Seconds()
	if pass != models.PassW {
		b := p.saved[unit]
		if b == nil {
			b = &[2]int64{}
			p.saved[unit] = b
		}
		b[pass] += saved
	}
}

// counting reports whether the step being ended is past the warm-up.
func (p *profiler) counting() bool { return p.steps >= p.warmup }

// endStep closes a step of this rank: per-micro-batch means of the step.
func (p *profiler) endStep(sr *stageloop.StepResult) {
	if p.counting() {
		for u, c := range p.cur {
			t := p.times[u]
			if t == nil {
				t = &[3][]float64{}
				p.times[u] = t
			}
			for k := range 3 {
				t[k] = append(t[k], c[k]/float64(p.micro))
			}
			if b := p.saved[u]; b != nil {
				old := p.bytes[u]
				p.bytes[u] = [2]int64{max(old[0], b[0]/int64(p.micro)), max(old[1], b[1]/int64(p.micro))}
			}
		}
		for s, n := range sr.PerMB {
			p.perMB[s] = max(p.perMB[s], n)
		}
		p.peak = max(p.peak, sr.Peak)
	}
	clear(p.cur)
	clear(p.saved)
	p.steps++
}

// record adds rank 0's step record: the step time, and each transfer of
// replica 0's pipeline (ranks 0..pp-1). It comes after endStep of the same
// step.
func (p *profiler) record(sched *schedules.Schedule, rec *StepRecord) {
	if p.steps-1 < p.warmup {
		return
	}
	p.stepS = append(p.stepS, rec.StepS)
	type at struct{ rank, i int }
	sends := map[schedules.Action]at{}
	for r := range sched.P {
		for i, sp := range rec.Timeline.Ranks[r] {
			if k := sp.Action.Kind; k == schedules.SendF || k == schedules.SendB {
				sends[sp.Action] = at{r, i}
			}
		}
	}
	for r := range sched.P {
		for _, recv := range rec.Timeline.Ranks[r] {
			a := recv.Action
			if a.Kind != schedules.RecvF && a.Kind != schedules.RecvB {
				continue
			}
			m, _ := a.Matching()
			s, ok := sends[m]
			if !ok {
				continue
			}
			send := rec.Timeline.Ranks[s.rank][s.i]
			d := min(send.End-send.Start, recv.End-max(recv.Start, send.Start))
			b, dir := a.Stage-1, 0 // RECV_F of stage s: boundary s-1
			if a.Kind == schedules.RecvB {
				b, dir = a.Stage, 1
			}
			p.xfer[[2]int{b, dir}] = append(p.xfer[[2]int{b, dir}], max(d, 0))
		}
	}
}

// unitsOf lists the model units of the stages of pipeline rank pr, in the
// order the rank reports them.
func (j *rankJob) unitsOf(pr int) []int {
	var us []int
	for _, s := range j.sched.StagesOf(pr) {
		first := 0
		for _, n := range j.cut[:s] {
			first += n
		}
		if s == 0 {
			us = append(us, -1)
		}
		for b := range j.cut[s] {
			us = append(us, first+b)
		}
		if s == j.sched.Stages()-1 {
			us = append(us, j.cfg.Model.Layers)
		}
	}
	return us
}

// profileVector is what a pipeline rank sends rank 0: per unit the median
// F, I, W seconds and the bytes kept after F and after I, then per stage the
// kept bytes, then the rank's peak.
func (rp *reporter) profileVector() []float64 {
	p := rp.prof
	var v []float64
	for _, u := range rp.unitsOf(rp.pRank) {
		tm := p.times[u]
		if tm == nil {
			tm = &[3][]float64{}
		}
		v = append(v, median(tm[0]), median(tm[1]), median(tm[2]), float64(p.bytes[u][0]), float64(p.bytes[u][1]))
	}
	for _, s := range rp.sched.StagesOf(rp.pRank) {
		v = append(v, float64(p.perMB[s]))
	}
	return append(v, float64(p.peak))
}

// gatherProfile sends every pipeline rank's measurements of replica 0 to
// rank 0, which returns the profile; other ranks return nil.
func (rp *reporter) gatherProfile(ctx context.Context) (*plan.Profile, error) {
	if rp.prof == nil || rp.dRank != 0 {
		return nil, nil
	}
	tag := collective.Tag{Kind: collective.Control, Chunk: chunkProfile}
	wctx, cancel := rp.waitCtx(ctx)
	defer cancel()
	if rp.job.Rank != 0 {
		if err := rp.job.Comm.Send(wctx, 0, tag, collective.F64(rp.profileVector())); err != nil {
			return nil, fmt.Errorf("profile to rank 0: %w", err)
		}
		return nil, nil
	}
	all := make([][]float64, rp.cfg.PP)
	all[0] = rp.profileVector()
	var ops []collective.Op
	for r := 1; r < rp.cfg.PP; r++ {
		all[r] = make([]float64, unitFields*len(rp.unitsOf(r))+len(rp.sched.StagesOf(r))+1)
		ops = append(ops, collective.RecvOp(r, tag, collective.F64(all[r])))
	}
	if len(ops) > 0 {
		if err := rp.job.Comm.Batch(ops...).Wait(wctx); err != nil {
			return nil, fmt.Errorf("profiles from the pipeline ranks: %w", err)
		}
	}
	return rp.buildProfile(all), nil
}

// buildProfile puts rank 0's profile together from every pipeline rank's
// vector (see profileVector).
func (rp *reporter) buildProfile(all [][]float64) *plan.Profile {
	c, p := rp.cfg, rp.prof
	m := c.Model
	slots := map[string]int{"adamw": 2, "sgd": 1}[c.Optimizer]
	pr := &plan.Profile{
		Version: plan.ProfileVersion, Backend: rp.job.Compute.Name(), Precision: c.Precision.String(), MicroBatchSize: c.MicroSize, Recompute: c.Recompute,
		Model:  plan.ProfileModel{Kind: m.Kind, Vocab: m.Vocab, Layers: m.Layers, Width: m.Width, Heads: m.Heads, Seq: m.Seq, Tied: m.Tied, Params: m.NumParams()},
		Layout: plan.ProfileLayout{PP: c.PP, DP: c.DP, Schedule: c.Schedule, Virtual: rp.sched.V, Microbatches: c.Micro, Cut: rp.cut},
		Steps:  len(p.stepS), WarmupSteps: p.warmup, StepS: median(p.stepS),
		Optimizer: c.Optimizer, OptimizerState: slots,
		Units: make([]plan.UnitProfile, m.Layers+2),
	}
	for r, v := range all {
		for i, u := range rp.unitsOf(r) {
			row := v[unitFields*i:]
			pr.Units[u+1] = plan.UnitProfile{Unit: u, F: row[0], I: row[1], W: row[2], ActivationBytes: int64(row[3]), AfterInputBytes: int64(row[4])}
		}
		k := unitFields * len(rp.unitsOf(r))
		for j, s := range rp.sched.StagesOf(r) {
			pr.Stages = append(pr.Stages, plan.StageProfile{Stage: s, Rank: r, Blocks: rp.cut[s], ActivationBytes: int64(v[k+j])})
		}
		pr.Ranks = append(pr.Ranks, plan.RankProfile{Rank: r, PeakActivationBytes: int64(v[len(v)-1])})
	}
	for i := range pr.Units {
		u := &pr.Units[i]
		u.Unit, u.Params = i-1, m.UnitParams(i-1)
		switch {
		case i == 0:
			u.Name = "embedding"
		case i == m.Layers+1:
			u.Name = "head"
		default:
			u.Name = fmt.Sprintf("block %d", i-1)
		}
	}
	slices.SortFunc(pr.Stages, func(a, b plan.StageProfile) int { return a.Stage - b.Stage })
	bytes := int64(4 * c.MicroSize * m.Seq * m.Width)
	for b := range rp.sched.Stages() - 1 {
		pr.Boundaries = append(pr.Boundaries, plan.BoundaryCost{After: b, Bytes: bytes, Local: rp.sched.Placement[b] == rp.sched.Placement[b+1],
			Forward: median(p.xfer[[2]int{b, 0}]), Backward: median(p.xfer[[2]int{b, 1}])})
	}
	return pr
}
