package ranks

import (
	"fmt"

	"github.com/pplaunch/pplaunch/ranks/stageloop"

	"github.com/pplaunch/pplaunch/models"
)

// rankStages are the stages the rank owns and what updates and runs them:
// their optimizers, the executor of the rank's action list, and the timing
// hook every stage is built with. A recut replaces the stages and
// optimizers in place; checkpoints, the ZeRO shard, evaluation and samples
// read them.
type rankStages struct {
	*rankJob
	stages map[int]*models.Stage
	opts   map[int]models.Optimizer
	names  []string // every non-tied parameter of the model, in model order
	exec   *stageloop.Executor
	execSt map[int]stageloop.Stage
	timing models.Timing // the stages' hook (rankJob.timing); nil: none
}

// newRankStages builds the rank's stages of run's cut (from --init-from
// when given), with timing as their hook, and the executor that runs them.
func newRankStages(run *rankJob, timing models.Timing) (*rankStages, error) {
	c := run.cfg
	rs := &rankStages{rankJob: run, stages: map[int]*models.Stage{}, opts: map[int]models.Optimizer{}, timing: timing}
	for _, s := range run.order {
		st, opt, err := rs.newStage(run.cut, s)
		if err != nil {
			return nil, err
		}
		if c.InitFrom != "" {
			if err := st.InitFrom(c.InitFrom); err != nil {
				return nil, fmt.Errorf("--init-from %s: %w", c.InitFrom, err)
			}
		}
		rs.stages[s], rs.opts[s] = st, opt
	}
	for _, p := range c.Model.Params() {
		if p.TiedTo == "" {
			rs.names = append(rs.names, p.Name)
		}
	}
	rs.execSt = map[int]stageloop.Stage{}
	for s, st := range rs.stages {
		rs.execSt[s] = st
	}
	rs.exec = &stageloop.Executor{
		Sched: run.sched, PRank: run.pRank, Stages: rs.execSt, Comm: run.job.Comm, DeviceComm: run.job.DeviceComm,
		Peer:      func(p int) int { return run.world(p, run.dRank) },
		First:     run.dRank * c.Micro,
		MicroSize: c.MicroSize,
		Timeout:   c.Timeout,
		Stall:     run.job.Stall,
		Compute:   run.job.Compute,
		Act:       c.Precision.Activations(),
	}
	return rs, nil
}

// newStage builds stage s of cut and its optimizer, with the run's loss
// scale and timing hook.
func (rs *rankStages) newStage(cut []int, s int) (*models.Stage, models.Optimizer, error) {
	c := rs.cfg
	st, err := models.NewStage(c.Model, cut, s, rs.job.Compute, models.StageOptions{Seed: c.Seed, Recompute: c.Recompute, Activations: c.Precision.Activations()})
	if err != nil {
		return nil, nil, fmt.Errorf("stage %d: %w", s, err)
	}
	st.SetLossScale(float32(1 / float64(c.DP*c.Micro)))
	st.SetTiming(rs.timing)
	opt, err := c.newOptimizer()
	if err != nil {
		return nil, nil, fmt.Errorf("--optimizer: %w", err)
	}
	return st, rs.shardOptimizer(st, opt), nil
}

// optimizerBytes is the optimizer state this rank's stages hold.
func (rs *rankStages) optimizerBytes() int64 {
	var n int64
	for _, s := range rs.order {
		n += rs.opts[s].StateBytes()
	}
	return n
}
