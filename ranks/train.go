package ranks

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/pplaunch/pplaunch/collective"
	"github.com/pplaunch/pplaunch/models"
	"github.com/pplaunch/pplaunch/models/data"
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

// trainer is one rank's state, in named parts: the job as given, where the
// rank sits in the layout, the stages it owns, its clock against rank 0's,
// and the step in flight. The parts are embedded, so each file reaches the
// fields it needs by name.
type trainer struct {
	cfg TrainConfig
	job Job
	rankPlace
	rankStages
	rankClock
	stepState
	corpus *data.Corpus
	prof   *profiler // nil unless TrainConfig.Profile
}

// rankPlace is where the rank sits in the layout, as Train planned it.
type rankPlace struct {
	sched *schedules.Schedule // what every pipeline rank runs
	cut   []int               // blocks per stage
	pRank int                 // pipeline rank
	dRank int                 // data-parallel replica
	order []int               // this rank's stages, increasing
}

// rankStages are the stages the rank owns and what updates and runs them
// (setup builds them; checkpoints and the ZeRO shard read and load them).
type rankStages struct {
	stages map[int]*models.Stage
	opts   map[int]models.Optimizer
	names  []string // every non-tied parameter of the model, in model order
	exec   *Executor
	execSt map[int]Stage
}

// rankClock is the rank's clock against rank 0's (clock.go), for the
// merged timeline.
type rankClock struct {
	origin time.Time
	offset time.Duration // add to this rank's clock to get rank 0's
}

// stepState is the step in flight (train.go's loop, dpreduce.go).
type stepState struct {
	dp      map[int]*dpExchange // data-parallel reduction in flight, per stage
	curStep int
	ctx     context.Context // the running step's (for the transfers it starts)
	prof    *profiler       // nil unless TrainConfig.Profile
	// --rebalance: when the ranks check the cut, what they measured since
	// the last check (nil: off), whether one came before, and the cuts run
	// and moves made so far.
	windows rebalanceWindows
	meter   *recutMeter
	checked bool
	history RecutHistory
	// updating is set while the optimizer takes a step: a failure then
	// leaves some stages a step ahead, and nothing to salvage.
	updating bool
}

// Chunk numbers of the control messages (activations and gradients use the stage).
const (
	chunkTied   = 0xFFF0 // tied embedding gradient between first and last stage
	chunkReport = 0xFFF1 // a rank's measured step, to rank 0
	chunkEval   = 0xFFF2 // validation activations
)

// world rank of pipeline rank p in replica d.
func (t *trainer) world(p, d int) int { return d*t.cfg.PP + p }

// Train runs the job on this rank. Every rank calls it with the same cfg.
func Train(ctx context.Context, cfg TrainConfig, job Job) (*Result, error) {
	l, err := cfg.Plan(job.Size)
	if err != nil {
		return nil, err
	}
	cfg.PP, cfg.DP = l.PP, l.DP
	t := &trainer{cfg: cfg, job: job, rankPlace: rankPlace{sched: l.Sched, cut: l.Cut, pRank: job.Rank % cfg.PP, dRank: job.Rank / cfg.PP}}
	if err := t.setup(ctx); err != nil {
		return nil, err
	}
	// On an error the rank returns at once; the agent then stops the others,
	// so the first error stays the root cause of the summary.
	return t.loop(ctx)
}

func (t *trainer) setup(ctx context.Context) error {
	c := t.cfg
	if t.job.Compute == nil {
		return errors.New("no compute backend")
	}
	if d := t.job.DeviceComm; d != nil {
		if t.job.Compute.Device() == nil && d.MovesDevice() {
			return errors.New("the device communicator moves GPU tensors, and the compute backend's tensors live in host memory (use --device cuda, or --backend tcp)")
		}
		if d.Rank() != t.job.Rank || d.Size() != t.job.Size {
			return fmt.Errorf("device communicator is rank %d of %d, the job rank %d of %d", d.Rank(), d.Size(), t.job.Rank, t.job.Size)
		}
	}
	var err error
	if t.corpus, err = LoadData(c); err != nil {
		return err
	}
	if err := t.checkConfig(ctx); err != nil {
		return err
	}
	t.stages, t.opts = map[int]*models.Stage{}, map[int]models.Optimizer{}
	if c.Profile {
		t.prof = newProfiler(c.Micro, c.Steps)
	}
	if t.windows, err = parseRebalance(c.Rebalance); err != nil {
		return err
	}
	if t.windows.on() {
		t.meter = newRecutMeter(c.Model.Layers, c.Recompute)
	}
	t.order = t.sched.StagesOf(t.pRank)
	for _, s := range t.order {
		st, opt, err := t.newStage(t.cut, s)
		if err != nil {
			return err
		}
		if c.InitFrom != "" {
			if err := st.InitFrom(c.InitFrom); err != nil {
				return fmt.Errorf("--init-from %s: %w", c.InitFrom, err)
			}
		}
		t.stages[s], t.opts[s] = st, opt
	}
	for _, p := range c.Model.Params() {
		if p.TiedTo == "" {
			t.names = append(t.names, p.Name)
		}
	}
	t.execSt = map[int]Stage{}
	for s, st := range t.stages {
		t.execSt[s] = st
	}
	t.exec = &Executor{
		Sched: t.sched, PRank: t.pRank, Stages: t.execSt, Comm: t.job.Comm, Device: t.job.DeviceComm,
		Peer:      func(p int) int { return t.world(p, t.dRank) },
		First:     t.dRank * c.Micro,
		MicroSize: c.MicroSize,
		Timeout:   c.Timeout,
		Stall:     t.job.Stall,
		Backend:   t.job.Compute,
		Act:       c.Precision.Activations(),
	}
	if c.DP > 1 {
		t.exec.OnLastBackward = t.startReduce
	}
	return t.alignClocks(ctx)
}

// newStage builds stage s of cut and its optimizer, with the run's loss
// scale and timing hooks.
func (t *trainer) newStage(cut []int, s int) (*models.Stage, models.Optimizer, error) {
	c := t.cfg
	st, err := models.NewStage(c.Model, cut, s, t.job.Compute, models.StageOptions{Seed: c.Seed, Recompute: c.Recompute, Activations: c.Precision.Activations()})
	if err != nil {
		return nil, nil, fmt.Errorf("stage %d: %w", s, err)
	}
	st.SetLossScale(float32(1 / float64(c.DP*c.Micro)))
	st.SetTiming(t.timing())
	opt, err := c.newOptimizer()
	if err != nil {
		return nil, nil, fmt.Errorf("--optimizer: %w", err)
	}
	return st, t.shardOptimizer(st, opt), nil
}

// now is the time by Job.Clock.
func (t *trainer) now() time.Time {
	if t.job.Clock != nil {
		return t.job.Clock()
	}
	return time.Now()
}

// waitCtx bounds one of the trainer's waits by --timeout (see waitCtx).
func (t *trainer) waitCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	return waitCtx(ctx, t.cfg.Timeout)
}

func (t *trainer) loop(ctx context.Context) (*Result, error) {
	c := t.cfg
	first, err := t.restore(ctx)
	if err != nil {
		return nil, err
	}
	if t.job.OnResume != nil && t.job.Rank == 0 {
		t.job.OnResume(first)
	}
	res := &Result{FirstStep: first, Steps: c.Steps}
	for step := first; step < c.Steps; step++ {
		start, cpu0 := t.now(), cpuTime()
		t.meter.begin()
		o, err := t.runStep(ctx, step, first)
		if err != nil {
			t.salvage(step)
			return nil, err
		}
		// The step's time ends here: the evaluation and the checkpoint
		// after it have records of their own.
		o.stepS, o.cpuS = t.now().Sub(start).Seconds(), (cpuTime() - cpu0).Seconds()
		t.meter.endStep(o.stepS, t.window())
		last := step == c.Steps-1
		o.stop = o.stop && !last
		events, err := t.evalAndSave(ctx, step, last, o.stop, res)
		if err != nil {
			return nil, err
		}
		if ev, err := t.rebalanceAfter(ctx, step, last || o.stop); err != nil {
			return nil, err
		} else if ev != nil {
			events = append(events, *ev)
		}
		if err := t.publish(ctx, step, o, events, res); err != nil {
			return nil, err
		}
		// After the step's record, whose time it is not part of.
		if sampleDue(t.job.Sample, step, c.Steps) {
			if err := t.sample(ctx, step); err != nil {
				return nil, err
			}
		}
		if o.stop {
			res.Steps, res.Stopped = step+1, true
			break
		}
	}
	if res.Profile, err = t.gatherProfile(ctx); err != nil {
		return nil, err
	}
	return res, nil
}

// stepOutcome is what one step's compute and update give the loop.
type stepOutcome struct {
	sr             *StepResult
	norm, loss, lr float64
	stop           bool // a rank was asked to stop (preemption)
	// reduceS is the time of the reductions after the pipeline (replicas'
	// gradients, the tied embedding, the loss and norm), optimS the
	// optimizer update's; stepS and cpuS the whole step's wall and CPU
	// time, without the evaluation and checkpoint after it.
	reduceS, optimS, stepS, cpuS float64
}

// runStep runs step's schedule, combines the gradients across replicas and
// the tied embedding, reduces the norm and losses, stops on a non-finite one,
// and takes the optimizer step.
func (t *trainer) runStep(ctx context.Context, step, first int) (stepOutcome, error) {
	c := t.cfg
	t.curStep, t.ctx = step, ctx
	t.job.Compute.ResetPeakMemory()
	if shapesDue(c.CheckTransfers, t.job.DeviceComm != nil && t.job.DeviceComm.MovesDevice(), step, first) {
		if err := t.checkShapes(ctx, step); err != nil {
			return stepOutcome{}, err
		}
	}
	batches := func(g int) ([]int32, []int32, error) {
		return t.corpus.Batch(c.Seed, t.curStep, g, c.MicroSize, c.Model.Seq)
	}
	sr, err := t.exec.Step(ctx, step, batches)
	if err != nil {
		return stepOutcome{}, err
	}
	if t.prof != nil {
		t.prof.endStep(sr)
	}
	reduceStart := time.Now()
	if c.DP > 1 {
		if err := t.finishReduce(ctx, step); err != nil {
			return stepOutcome{}, err
		}
	}
	if err := t.syncTied(ctx, step); err != nil {
		return stepOutcome{}, err
	}
	o := stepOutcome{sr: sr, lr: c.LRAt(step)}
	o.norm, o.loss, o.stop, err = t.reduceScalars(ctx, step, sr.Losses, t.job.Stop != nil && t.job.Stop())
	if err == nil {
		err = checkStep(step, o.loss, o.norm)
	}
	if err != nil {
		return stepOutcome{}, err
	}
	optimStart := time.Now()
	if t.job.Comm.Size() > 1 {
		// One rank exchanges nothing: what the time above holds is local
		// work (Σg², the tied sum), so its transfer share is zero by
		// construction rather than a small measured number.
		o.reduceS = optimStart.Sub(reduceStart).Seconds()
	}
	scale := models.ClipScale(o.norm, c.Clip)
	t.updating = true // until every stage has taken the step: no state to salvage
	for _, s := range t.order {
		if err := t.opts[s].Step(t.stages[s].Params(), o.lr, scale); err != nil {
			return stepOutcome{}, fmt.Errorf("step %d: optimizer of stage %d: %w", step, s, err)
		}
	}
	t.updating = false
	o.optimS = time.Since(optimStart).Seconds()
	if t.zeroOn() {
		gatherStart := time.Now()
		if err := t.gatherParams(ctx, step); err != nil {
			return stepOutcome{}, err
		}
		o.reduceS += time.Since(gatherStart).Seconds()
	}
	return o, nil
}

// evalAndSave evaluates when due (every EvalEvery steps and after the last)
// and checkpoints when due (every CheckpointEvery steps, and after the last or
// a stop), returning a record of each on rank 0, timed on its clock.
func (t *trainer) evalAndSave(ctx context.Context, step int, last, stop bool, res *Result) ([]EventRecord, error) {
	c := t.cfg
	var events []EventRecord
	if (c.EvalEvery > 0 && (step+1)%c.EvalEvery == 0) || last {
		start := t.now()
		v, err := t.evaluate(ctx, step)
		if err != nil {
			return nil, err
		}
		if v != nil {
			events = append(events, EventRecord{Record: RecordEval, Step: step + 1, Seconds: t.now().Sub(start).Seconds(), ValLoss: v, Batches: c.EvalBatches})
		}
	}
	if (c.CheckpointEvery > 0 && (step+1)%c.CheckpointEvery == 0) || ((last || stop) && c.CheckpointDir != "") {
		start := t.now()
		dir, err := t.save(ctx, step+1)
		if err != nil {
			return nil, err
		}
		res.Checkpoint = dir
		events = append(events, EventRecord{Record: RecordCheckpoint, Step: step + 1, Seconds: t.now().Sub(start).Seconds(), Dir: dir})
	}
	return events, nil
}

// publish sends this rank's measured step to rank 0, which completes the
// record (loss, validation loss, norm, rate, time, throughput), adds it to the
// summary and the profile, and hands it to Job.Report, then the evaluation's
// and checkpoint's records after it to Job.Event.
func (t *trainer) publish(ctx context.Context, step int, o stepOutcome, events []EventRecord, res *Result) error {
	c := t.cfg
	rec, err := t.report(ctx, step, o, o.cpuS)
	if err != nil || t.job.Rank != 0 {
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
	if t.prof != nil {
		t.prof.record(t.sched, rec)
	}
	if t.job.Report != nil {
		t.job.Report(*rec)
	}
	if t.job.Event != nil {
		for _, e := range events {
			t.job.Event(e)
		}
	}
	return nil
}
