package ranks

import (
	"context"
	"fmt"
	"time"

	"github.com/pplaunch/pplaunch/ranks/stageloop"

	"github.com/pplaunch/pplaunch/models"
)

// stepLoop is the step in flight: the data-parallel reductions it started
// (dpreduce.go), its number and context (for the transfers the executor's
// hooks start), and whether the optimizer is taking its update.
type stepLoop struct {
	*rankJob
	dp      map[int]*dpExchange // data-parallel reduction in flight, per stage
	curStep int
	ctx     context.Context // the running step's (for the transfers it starts)
	// updating is set while the optimizer takes a step: a failure then
	// leaves some stages a step ahead, and nothing to salvage.
	updating bool
}

// stepOutcome is what one step's compute and update give the loop.
type stepOutcome struct {
	sr             *stageloop.StepResult
	norm, loss, lr float64
	stop           bool // a rank was asked to stop (preemption)
	// reduceS is the time of the reductions after the pipeline (replicas'
	// gradients, the tied embedding, the loss and norm), optimS the
	// optimizer update's; stepS and cpuS the whole step's wall and CPU
	// time, without the evaluation and checkpoint after it.
	reduceS, optimS, stepS, cpuS float64
}

// step runs step's schedule on rs, combines the gradients across replicas
// and the tied embedding, reduces the norm and losses, stops on a
// non-finite one, and takes the optimizer step.
func (sl *stepLoop) step(ctx context.Context, step, first int, rs *rankStages) (stepOutcome, error) {
	c := sl.cfg
	sl.curStep, sl.ctx = step, ctx
	sl.job.Compute.ResetPeakMemory()
	if shapesDue(c.CheckTransfers, sl.job.DeviceComm != nil && sl.job.DeviceComm.MovesDevice(), step, first) {
		if err := rs.checkShapes(ctx, step); err != nil {
			return stepOutcome{}, err
		}
	}
	batches := func(g int) ([]int32, []int32, error) {
		return sl.corpus.Batch(c.Seed, sl.curStep, g, c.MicroSize, c.Model.Seq)
	}
	sr, err := rs.exec.Step(ctx, step, batches)
	if err != nil {
		return stepOutcome{}, err
	}
	reduceStart := time.Now()
	if c.DP > 1 {
		if err := sl.finishReduce(ctx, step); err != nil {
			return stepOutcome{}, err
		}
	}
	if err := rs.syncTied(ctx, step); err != nil {
		return stepOutcome{}, err
	}
	o := stepOutcome{sr: sr, lr: c.LRAt(step)}
	o.norm, o.loss, o.stop, err = rs.reduceScalars(ctx, step, sr.Losses, sl.job.Stop != nil && sl.job.Stop())
	if err == nil {
		err = checkStep(step, o.loss, o.norm)
	}
	if err != nil {
		return stepOutcome{}, err
	}
	optimStart := time.Now()
	if sl.job.Comm.Size() > 1 {
		// One rank exchanges nothing: what the time above holds is local
		// work (Σg², the tied sum), so its transfer share is zero by
		// construction rather than a small measured number.
		o.reduceS = optimStart.Sub(reduceStart).Seconds()
	}
	if err := sl.update(step, rs, o); err != nil {
		return stepOutcome{}, err
	}
	o.optimS = time.Since(optimStart).Seconds()
	if sl.zeroOn() {
		gatherStart := time.Now()
		if err := sl.gatherParams(ctx, step); err != nil {
			return stepOutcome{}, err
		}
		o.reduceS += time.Since(gatherStart).Seconds()
	}
	return o, nil
}

// update takes every stage's optimizer step at o's rate and clipped norm.
func (sl *stepLoop) update(step int, rs *rankStages, o stepOutcome) error {
	scale := models.ClipScale(o.norm, sl.cfg.Clip)
	sl.updating = true // until every stage has taken the step: no state to salvage
	for _, s := range sl.order {
		if err := rs.opts[s].Step(rs.stages[s].Params(), o.lr, scale); err != nil {
			return fmt.Errorf("step %d: optimizer of stage %d: %w", step, s, err)
		}
	}
	sl.updating = false
	return nil
}
