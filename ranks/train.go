package ranks

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/pplaunch/pplaunch/collective"
	"github.com/pplaunch/pplaunch/models"
	"github.com/pplaunch/pplaunch/models/tensor"
	"github.com/pplaunch/pplaunch/plan"
	"github.com/pplaunch/pplaunch/schedules"
	"github.com/pplaunch/pplaunch/store"
)

// Job is where a rank runs: its place in the world and its connections.
type Job struct {
	Rank, Size int
	Node       int // this rank's node, for messages
	Store      store.Store
	Comm       collective.Comm // the whole world
	// DeviceComm, when set, moves the device tensors (activations, gradients,
	// the data-parallel exchange, the tied embedding's gradient, validation
	// activations): a communicator of device memory over the same world
	// (collective.NewNCCL on Compute's GPU), with Comm carrying the host
	// messages (the scalar all-reduce, reports, validation losses, the
	// configuration and transfer-shape checks). nil: Comm carries everything.
	DeviceComm collective.Comm
	Restart    int // restart count (0: first attempt)
	// Compute is the backend the rank's stages compute on (--device).
	Compute tensor.Backend
	// Report receives rank 0's per-step records (nil on other ranks' Job is fine).
	Report func(StepRecord)
	// Clock, if set, times each step, evaluation and checkpoint for their
	// records (a fake clock in tests); nil is time.Now.
	Clock func() time.Time
	// Event receives rank 0's records of the evaluations and checkpoints
	// between steps, each after its step's record (nil is fine).
	Event func(EventRecord)
	// Stall, if set, runs before every action: the test-only fault hooks of
	// pplaunch train (PPLAUNCH_TEST_STALL, PPLAUNCH_TEST_KILL); nil normally.
	Stall func(step int, a schedules.Action)
	// Slow, if set, runs inside the measured time of each block's pass
	// (one sublayer's; d is the time measured so far), and what it returns
	// is counted in that time as well: the test-only PPLAUNCH_TEST_SLOW
	// hook (slowhook.go), which burns the time or only counts it; nil
	// normally.
	Slow func(unit int, pass models.Pass, d time.Duration) time.Duration
	// Logf prints a line on this rank's output.
	Logf func(format string, args ...any)
	// Sample, if set, has rank 0 print text from the model at the end (and
	// every Sample.Every steps), generated through replica 0's pipeline and
	// given to OnSample on rank 0. Every rank needs the same Sample.
	Sample   *SampleOptions
	OnSample func(Sample)
	// Stop, if set, says whether this rank has been asked to stop early (a
	// preemption signal). At the end of every step the ranks combine their
	// answers in the step's all-reduce, so they all agree on the step to stop
	// after, even when the signal reached only some of them; they then write
	// a checkpoint (with CheckpointDir) and Train returns with Stopped set.
	Stop func() bool
	// OnResume, if set, is told on rank 0 the step training starts from
	// (a checkpoint's, or 0) before the first step.
	OnResume func(step int)
	// Salvage, with CheckpointDir, has the ranks left after a failed step
	// save the last completed one from memory where every stage still has
	// a holder (salvage.go): an elastic job's world then re-forms without
	// losing a step.
	Salvage bool
}

// Result is what Train returns on rank 0.
type Result struct {
	FirstStep, Steps int           // ran steps FirstStep..Steps-1
	Summary          Summary       // running totals of rank 0's step records
	Checkpoint       string        // directory of the final checkpoint, if any
	Stopped          bool          // Job.Stop asked to stop before the last step
	Profile          *plan.Profile // with TrainConfig.Profile: the measured costs
}

// trainer is one rank's training job, composed of the parts that own its
// state: what every part reads (rankJob: the configuration, the job, where
// the rank sits in the layout, the data), the stages and what runs them
// (rankStages), the step in flight (stepLoop), checkpointing
// (checkpointer), evaluation (evaluator), the records rank 0 emits and the
// clock they are timed on (reporter), and --rebalance (rebalancer). A
// method that needs two parts is given them; the trainer itself only
// builds the parts and runs the loop over steps.
type trainer struct {
	run    *rankJob
	stages *rankStages
	steps  *stepLoop
	ckpt   *checkpointer
	eval   *evaluator
	rep    *reporter
	rebal  *rebalancer
}

// Chunk numbers of the control messages (activations and gradients use the stage).
const (
	chunkTied   = 0xFFF0 // tied embedding gradient between first and last stage
	chunkReport = 0xFFF1 // a rank's measured step, to rank 0
	chunkEval   = 0xFFF2 // validation activations
)

// Train runs the job on this rank. Every rank calls it with the same cfg.
func Train(ctx context.Context, cfg TrainConfig, job Job) (*Result, error) {
	l, err := cfg.Plan(job.Size)
	if err != nil {
		return nil, err
	}
	cfg.PP, cfg.DP = l.PP, l.DP
	pRank := job.Rank % cfg.PP
	run := &rankJob{cfg: cfg, job: job, rankPlace: rankPlace{sched: l.Sched, cut: l.Cut, pRank: pRank, dRank: job.Rank / cfg.PP, order: l.Sched.StagesOf(pRank)}}
	t := &trainer{run: run, steps: &stepLoop{rankJob: run}, ckpt: &checkpointer{rankJob: run},
		eval: &evaluator{rankJob: run}, rep: &reporter{rankJob: run}, rebal: &rebalancer{rankJob: run}}
	if err := t.setup(ctx); err != nil {
		return nil, err
	}
	// On an error the rank returns at once; the agent then stops the others,
	// so the first error stays the root cause of the summary.
	return t.loop(ctx)
}

// setup checks the job against its communicators and every rank's flags,
// loads the data, builds the stages and their executor, and aligns the
// clocks.
func (t *trainer) setup(ctx context.Context) error {
	r, c := t.run, t.run.cfg
	if err := checkComms(r.job); err != nil {
		return err
	}
	var err error
	if r.corpus, err = LoadData(c); err != nil {
		return err
	}
	if err := r.checkConfig(ctx); err != nil {
		return err
	}
	if c.Profile {
		t.rep.prof = newProfiler(c.Micro, c.Steps)
	}
	if t.rebal.windows, err = parseRebalance(c.Rebalance); err != nil {
		return err
	}
	if t.rebal.windows.on() {
		t.rebal.meter = newRecutMeter(c.Model.Layers, c.Recompute)
	}
	if t.stages, err = newRankStages(r, r.timing(t.rep.prof, t.rebal.meter)); err != nil {
		return err
	}
	if c.DP > 1 {
		t.stages.exec.OnLastBackward = func(s int) error { return t.steps.startReduce(s, t.stages) }
	}
	return t.rep.alignClocks(ctx)
}

// checkComms checks that the job has a compute backend and that its device
// communicator, if any, fits it and the job's world.
func checkComms(job Job) error {
	if job.Compute == nil {
		return errors.New("no compute backend")
	}
	if d := job.DeviceComm; d != nil {
		if job.Compute.Device() == nil && d.MovesDevice() {
			return errors.New("the device communicator moves GPU tensors, and the compute backend's tensors live in host memory (use --device cuda, or --backend tcp)")
		}
		if d.Rank() != job.Rank || d.Size() != job.Size {
			return fmt.Errorf("device communicator is rank %d of %d, the job rank %d of %d", d.Rank(), d.Size(), job.Rank, job.Size)
		}
	}
	return nil
}

// loop runs the steps from the checkpoint resumed (or 0): each step, then
// the evaluation, checkpoint and rebalancing due after it, its records, and
// the sample due after those.
func (t *trainer) loop(ctx context.Context) (*Result, error) {
	r, c := t.run, t.run.cfg
	first, err := t.ckpt.restore(ctx, t.stages)
	if err != nil {
		return nil, err
	}
	if r.job.OnResume != nil && r.job.Rank == 0 {
		r.job.OnResume(first)
	}
	res := &Result{FirstStep: first, Steps: c.Steps}
	for step := first; step < c.Steps; step++ {
		o, err := t.step(ctx, step, first)
		if err != nil {
			return nil, err
		}
		last := step == c.Steps-1
		o.stop = o.stop && !last
		events, err := t.evalAndSave(ctx, step, last, o.stop, res)
		if err != nil {
			return nil, err
		}
		if ev, err := t.rebal.after(ctx, step, last || o.stop, t.stages, t.steps); err != nil {
			return nil, err
		} else if ev != nil {
			events = append(events, *ev)
		}
		if err := t.rep.publish(ctx, step, o, events, res, t.stages.optimizerBytes()); err != nil {
			return nil, err
		}
		// After the step's record, whose time it is not part of.
		if sampleDue(r.job.Sample, step, c.Steps) {
			if err := t.stages.sample(ctx, step); err != nil {
				return nil, err
			}
		}
		if o.stop {
			res.Steps, res.Stopped = step+1, true
			break
		}
	}
	if res.Profile, err = t.rep.gatherProfile(ctx); err != nil {
		return nil, err
	}
	return res, nil
}

// step runs one step and times it; after a failed one the ranks left save
// the last completed step where they can (salvage).
func (t *trainer) step(ctx context.Context, step, first int) (stepOutcome, error) {
	start, cpu0 := t.run.now(), cpuTime()
	t.rebal.meter.begin()
	o, err := t.steps.step(ctx, step, first, t.stages)
	if err != nil {
		t.ckpt.salvage(step, t.stages, t.steps.updating)
		return o, err
	}
	t.rep.endStep(o.sr)
	// The step's time ends here: the evaluation and the checkpoint
	// after it have records of their own.
	o.stepS, o.cpuS = t.run.now().Sub(start).Seconds(), (cpuTime() - cpu0).Seconds()
	t.rebal.meter.endStep(o.stepS, t.rebal.window())
	return o, nil
}

// evalAndSave evaluates when due (every EvalEvery steps and after the last)
// and checkpoints when due (every CheckpointEvery steps, and after the last or
// a stop), returning a record of each on rank 0, timed on its clock.
func (t *trainer) evalAndSave(ctx context.Context, step int, last, stop bool, res *Result) ([]EventRecord, error) {
	r, c := t.run, t.run.cfg
	var events []EventRecord
	if (c.EvalEvery > 0 && (step+1)%c.EvalEvery == 0) || last {
		start := r.now()
		v, err := t.eval.evaluate(ctx, step, t.stages)
		if err != nil {
			return nil, err
		}
		if v != nil {
			events = append(events, EventRecord{Record: RecordEval, Step: step + 1, Seconds: r.now().Sub(start).Seconds(), ValLoss: v, Batches: c.EvalBatches})
		}
	}
	if (c.CheckpointEvery > 0 && (step+1)%c.CheckpointEvery == 0) || ((last || stop) && c.CheckpointDir != "") {
		start := r.now()
		dir, err := t.ckpt.save(ctx, step+1, t.stages)
		if err != nil {
			return nil, err
		}
		res.Checkpoint = dir
		events = append(events, EventRecord{Record: RecordCheckpoint, Step: step + 1, Seconds: r.now().Sub(start).Seconds(), Dir: dir})
	}
	return events, nil
}
