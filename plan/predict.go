package plan

import (
	"fmt"
	"math/bits"

	"github.com/pplaunch/pplaunch/schedules"
)

// Candidate is a layout whose step a profile predicts.
type Candidate struct {
	PP, DP    int
	Schedule  string
	Virtual   int // 0: the schedule's own
	Micro     int // micro-batches per step per replica
	MicroSize int // sequences per micro-batch
	Recompute bool
	Cut       []int // blocks per stage; nil: ProfileCut
	Zero      int   // ZeRO stage: 1 shards the optimizer state over the replicas
}

// Prediction is what the simulator makes of a candidate with a profile's
// costs. Times are seconds, memory bytes, per pipeline rank where a slice.
type Prediction struct {
	Candidate
	Cut       []int
	Stages    int
	StepS     float64 // PipelineS + ReduceS
	PipelineS float64 // simulated makespan of the step's pipeline, transfers included
	// ReduceS is the data-parallel gradient all-reduce of the rank with the
	// most parameters, as a ring at the profile's transfer bandwidth, not
	// overlapped with the pipeline (an upper bound); 0 without dp or
	// without a measured transfer.
	ReduceS       float64
	Bubble        float64
	SlowestStageS float64 // the largest stage's F+I+W for one micro-batch
	// Activations is each rank's peak of live activations as the executor
	// measures it (after each compute action); Transient is what a rank may
	// hold on top while one micro-batch's forward or recomputation runs.
	Activations, Transient []int64
	Params, Grads, Optim   []int64
	Memory                 []int64 // the sum of the five
}

// Predict simulates candidate c with the costs of profile p. Times scale
// with the micro-batch size in proportion to the profile's (a model, not a
// measurement: small micro-batches run below the machine's peak); with
// recomputation the input-gradient pass also pays the forward, and a stage
// keeps only its input between the passes. Gradient memory counts the
// stage's summed gradient and the accumulator's partial sums (at most
// ⌈log₂ M⌉+1 in micro-batch order). Optimizer memory is the profile's
// state per parameter, of ⌈1/dp⌉ of each stage's parameters under ZeRO
// stage 1 (the largest part); its exchange moves what an all-reduce does
// (a reduce-scatter of the gradients, an all-gather of the parameters).
func Predict(p *Profile, c Candidate) (*Prediction, error) {
	if err := CheckZero(c.Zero); err != nil {
		return nil, err
	}
	s, err := schedules.Generate(c.Schedule, c.PP, c.Micro, c.Virtual)
	if err != nil {
		return nil, err
	}
	pr := &Prediction{Candidate: c, Cut: c.Cut, Stages: s.Stages()}
	if pr.Cut == nil {
		if pr.Cut, err = ProfileCut(p, s.Stages()); err != nil {
			return nil, err
		}
	} else if len(pr.Cut) != s.Stages() {
		return nil, fmt.Errorf("a cut of %d stages for the %d stages of %s on %d ranks", len(pr.Cut), s.Stages(), c.Schedule, c.PP)
	}
	scale := float64(c.MicroSize) / float64(p.MicroBatchSize)
	costs := schedules.Costs{Stages: map[int]schedules.StageCost{}}
	held, afterI := make([]int64, s.Stages()), make([]int64, s.Stages())
	params := make([]int64, s.Stages())
	full := make([]int64, s.Stages())
	m := p.Model
	unit := -1
	for st, n := range pr.Cut {
		var sc schedules.StageCost
		units := []int{}
		if st == 0 {
			units = append(units, -1)
		}
		for range n {
			unit++
			units = append(units, unit)
		}
		if st == len(pr.Cut)-1 {
			units = append(units, m.Layers)
		}
		for _, u := range units {
			up := p.Units[u+1]
			sc.F += up.F * scale
			sc.I += up.I * scale
			sc.W += up.W * scale
			full[st] += int64(float64(up.ActivationBytes) * scale)
			afterI[st] += int64(float64(up.AfterInputBytes) * scale)
			params[st] += up.Params
		}
		pr.SlowestStageS = max(pr.SlowestStageS, sc.F+sc.I+sc.W)
		held[st] = full[st]
		if c.Recompute {
			sc.I += sc.F
			held[st] = recomputeBytes(m, c.MicroSize, st, len(pr.Cut), p.actBytes())
		}
		sc.B = sc.I + sc.W
		costs.Stages[st] = sc
	}
	xfer, _ := p.Transfer()
	costs.Comm = xfer * scale
	tl, err := schedules.Simulate(s, costs)
	if err != nil {
		return nil, err
	}
	st, err := schedules.Analyze(s, tl, nil)
	if err != nil {
		return nil, err
	}
	pr.PipelineS, pr.Bubble = st.Makespan, st.Bubble
	if pr.Activations, err = schedules.PeakBytes(s, tl, held, afterI); err != nil {
		return nil, err
	}
	pr.memory(p, s, params, full)
	if t, b := p.Transfer(); c.DP > 1 && t > 0 && b > 0 {
		bw := float64(b) / t
		for _, n := range pr.Params { // bytes of the rank's parameters = of its gradients
			pr.ReduceS = max(pr.ReduceS, 2*float64(c.DP-1)/float64(c.DP)*float64(n)/bw)
		}
	}
	pr.StepS = pr.PipelineS + pr.ReduceS
	return pr, nil
}

// memory fills the per-rank parameter, gradient, optimizer and transient
// activation bytes and the totals.
func (pr *Prediction) memory(p *Profile, s *schedules.Schedule, params, full []int64) {
	n := s.P
	pr.Params, pr.Grads, pr.Optim = make([]int64, n), make([]int64, n), make([]int64, n)
	pr.Transient, pr.Memory = make([]int64, n), make([]int64, n)
	partial := int64(1)
	if pr.Micro > 1 {
		partial += int64(bits.Len(uint(pr.Micro - 1)))
	}
	for st, r := range s.Placement {
		pr.Params[r] += 4 * params[st]
		pr.Grads[r] += 4 * params[st] * (1 + partial)
		held := params[st]
		if pr.Zero == 1 && pr.DP > 1 {
			held = (held + int64(pr.DP) - 1) / int64(pr.DP)
		}
		pr.Optim[r] += 4 * held * int64(p.OptimizerState)
		if pr.Recompute {
			pr.Transient[r] = max(pr.Transient[r], full[st])
		}
	}
	for r := range n {
		pr.Memory[r] = pr.Params[r] + pr.Grads[r] + pr.Optim[r] + pr.Activations[r] + pr.Transient[r]
	}
}

// recomputeBytes is what a stage keeps per micro-batch with recomputation:
// its input (the tokens on the first stage), of act bytes an element, and,
// on the last, the targets.
func recomputeBytes(m ProfileModel, b, stage, stages, act int) int64 {
	n := int64(act * b * m.Seq * m.Width)
	if stage == 0 {
		n = int64(4 * b * m.Seq)
	}
	if stage == stages-1 {
		n += int64(4 * b * m.Seq)
	}
	return n
}
