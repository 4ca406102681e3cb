package ranks

import (
	"context"
	"errors"
	"fmt"
	"math"
	"syscall"
	"time"

	"github.com/pplaunch/pplaunch/collective"
	"github.com/pplaunch/pplaunch/models"
	"github.com/pplaunch/pplaunch/models/data"
	"github.com/pplaunch/pplaunch/models/tensor"
	"github.com/pplaunch/pplaunch/ranks/store"
	"github.com/pplaunch/pplaunch/schedules"
)

// TrainConfig is one training job, the same on every rank.
type TrainConfig struct {
	Model     models.Config
	Schedule  string // one of schedules.Names
	Virtual   int    // virtual stages per rank (interleaved: 2 when 0; zb-v: 2)
	Micro     int    // micro-batches per step per data-parallel replica
	MicroSize int    // sequences per micro-batch
	PP, DP    int
	Recompute bool
	// Cut gives the blocks of each of stages stages (nil: models.Partition,
	// uniform).
	Cut         func(stages int) ([]int, error)
	Optimizer   string
	LR, MinLR   float64
	Warmup      int
	WeightDecay float64
	Clip        float64 // global gradient-norm clipping; 0 disables
	Steps       int
	EvalEvery   int // 0: only at the end
	EvalBatches int
	Seed        uint64
	Data        string // corpus path; "" the embedded default
	InitFrom    string // safetensors weights to start from instead of the seed
	Timeout     time.Duration

	CheckpointDir   string
	CheckpointEvery int
	Resume          bool
}

// Job is where a rank runs: its place in the world and its connections.
type Job struct {
	Rank, Size int
	Store      store.Store
	Comm       collective.Comm // the whole world
	Restart    int             // restart count (0: first attempt)
	Backend    tensor.Backend
	// Report receives rank 0's per-step records (nil on other ranks' Job is fine).
	Report func(StepRecord)
	// Stall, if set, runs before every action: the test-only fault hooks of
	// pplaunch train (PPLAUNCH_TEST_STALL, PPLAUNCH_TEST_KILL); nil normally.
	Stall func(step int, a schedules.Action)
	// Logf prints a line on this rank's output.
	Logf func(format string, args ...any)
	// Stop, if set, says whether this rank has been asked to stop early (a
	// preemption signal). At the end of every step the ranks combine their
	// answers in the step's all-reduce, so they all agree on the step to stop
	// after, even when the signal reached only some of them; they then write
	// a checkpoint (with CheckpointDir) and Train returns with Stopped set.
	Stop func() bool
}

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

// Result is what Train returns on rank 0.
type Result struct {
	FirstStep, Steps int // ran steps FirstStep..Steps-1
	Records          []StepRecord
	Checkpoint       string // directory of the final checkpoint, if any
	Stopped          bool   // Job.Stop asked to stop before the last step
}

// trainer is one rank's state.
type trainer struct {
	cfg    TrainConfig
	job    Job
	sched  *schedules.Schedule
	cut    []int
	pRank  int
	dRank  int
	stages map[int]*models.Stage
	order  []int // this rank's stages, increasing
	opts   map[int]models.Optimizer
	corpus *data.Corpus
	exec   *Executor
	execSt map[int]Stage
	names  []string // every non-tied parameter of the model, in model order
	origin time.Time
	offset time.Duration // add to this rank's clock to get rank 0's
	// data-parallel reduction in flight, per stage
	dp      map[int]*dpReduce
	curStep int
}

// Chunk numbers of the control messages (activations and gradients use the stage).
const (
	chunkTied   = 0xFFF0 // tied embedding gradient between first and last stage
	chunkReport = 0xFFF1 // a rank's measured step, to rank 0
	chunkEval   = 0xFFF2 // validation activations
)

type dpReduce struct {
	bufs [][]float32 // per replica; own is the stage's GradBuffer
	h    []*collective.Handle
}

// world rank of pipeline rank p in replica d.
func (t *trainer) world(p, d int) int { return d*t.cfg.PP + p }

// Layout is what a configuration gives a world: the pipeline and
// data-parallel widths, the schedule every pipeline rank runs, and the blocks
// of each stage.
type Layout struct {
	PP, DP int
	Sched  *schedules.Schedule // nil when the world size is not known and --pp not given
	Cut    []int
}

// Plan checks the whole configuration for a world of size ranks and returns
// its layout: pure, so the agent runs it before it spawns any rank (a bad flag
// is then one message, not one per rank), and every rank runs it again (under
// srun --direct there is no agent). PP 0 means size / DP. size 0 means the
// world is not known yet (one agent of several nodes): what does not depend
// on it is checked, and the schedule and cut too when --pp is given.
func (c *TrainConfig) Plan(size int) (Layout, error) {
	l := Layout{PP: c.PP, DP: c.DP}
	if err := c.checkFlags(); err != nil {
		return l, err
	}
	switch {
	case size > 0 && l.PP == 0:
		if size%l.DP != 0 {
			return l, fmt.Errorf("--dp %d does not divide the world of %d ranks", l.DP, size)
		}
		l.PP = size / l.DP
	case size > 0 && l.PP*l.DP != size:
		return l, fmt.Errorf("--pp %d × --dp %d = %d ranks, but the world has %d", l.PP, l.DP, l.PP*l.DP, size)
	case l.PP == 0:
		return l, nil
	}
	sched, err := schedules.Generate(c.Schedule, l.PP, c.Micro, c.Virtual)
	if err != nil {
		return l, fmt.Errorf("--schedule %s with --pp %d, --microbatches %d, --virtual %d: %w", c.Schedule, l.PP, c.Micro, c.Virtual, err)
	}
	l.Sched = sched
	if c.Cut != nil {
		l.Cut, err = c.Cut(sched.Stages())
	} else {
		l.Cut, err = models.Partition(c.Model, sched.Stages(), models.BalanceUniform)
	}
	if err != nil {
		return l, fmt.Errorf("cut the model into the %d stages of --schedule %s on --pp %d: %w", sched.Stages(), c.Schedule, l.PP, err)
	}
	return l, nil
}

// LoadData reads the corpus c.Data names (the embedded one when empty) and
// checks that its splits hold a sequence of c.Model.Seq tokens.
func LoadData(c TrainConfig) (*data.Corpus, error) {
	name := c.Data
	if name == "" {
		name = data.DefaultName
	}
	corpus, err := data.Load(c.Data)
	if err != nil {
		return nil, fmt.Errorf("--data %s: %w", name, err)
	}
	if n := corpus.TrainLen(); n < c.Model.Seq+1 {
		return nil, fmt.Errorf("--data %s: the training split has %d bytes, too few for --seq %d (needs %d)", name, n, c.Model.Seq, c.Model.Seq+1)
	}
	if n := corpus.ValLen(); c.EvalBatches > 0 && n < c.Model.Seq+1 {
		return nil, fmt.Errorf("--data %s: the validation split (the last tenth) has %d bytes, too few for --seq %d (needs %d; or --eval-batches 0)", name, n, c.Model.Seq, c.Model.Seq+1)
	}
	return corpus, nil
}

// checkFlags checks what does not depend on the world size.
func (c *TrainConfig) checkFlags() error {
	switch {
	case c.PP < 0 || c.DP < 1:
		return fmt.Errorf("--pp %d and --dp %d must be at least 1", c.PP, c.DP)
	case c.Micro < 1:
		return fmt.Errorf("--microbatches %d must be at least 1", c.Micro)
	case c.MicroSize < 1:
		return fmt.Errorf("--microbatch-size %d must be at least 1", c.MicroSize)
	case c.LR < 0 || c.MinLR < 0 || c.MinLR > c.LR:
		return fmt.Errorf("--lr %g and --min-lr %g: want 0 <= --min-lr <= --lr", c.LR, c.MinLR)
	case c.CheckpointDir == "" && (c.CheckpointEvery > 0 || c.Resume):
		return errors.New("--checkpoint-every and --resume need --checkpoint-dir")
	case c.DP > 1 && c.Micro&(c.Micro-1) != 0:
		// The accumulator's tree matches one process only for power-of-two blocks.
		return fmt.Errorf("--dp %d needs --microbatches a power of two (got %d) so that results do not depend on the layout", c.DP, c.Micro)
	}
	for _, f := range []struct {
		flag string
		v    any
		neg  bool
	}{
		{"--steps", c.Steps, c.Steps < 0}, {"--virtual", c.Virtual, c.Virtual < 0}, {"--warmup", c.Warmup, c.Warmup < 0},
		{"--weight-decay", c.WeightDecay, c.WeightDecay < 0}, {"--clip", c.Clip, c.Clip < 0},
		{"--eval-every", c.EvalEvery, c.EvalEvery < 0}, {"--eval-batches", c.EvalBatches, c.EvalBatches < 0},
		{"--checkpoint-every", c.CheckpointEvery, c.CheckpointEvery < 0}, {"--timeout", c.Timeout, c.Timeout < 0},
	} {
		if f.neg {
			return fmt.Errorf("%s %v must not be negative", f.flag, f.v)
		}
	}
	if _, err := models.NewOptimizer(c.Optimizer, c.WeightDecay); err != nil {
		return fmt.Errorf("--optimizer: %w", err)
	}
	return c.Model.Validate()
}

// Train runs the job on this rank. Every rank calls it with the same cfg.
func Train(ctx context.Context, cfg TrainConfig, job Job) (*Result, error) {
	l, err := cfg.Plan(job.Size)
	if err != nil {
		return nil, err
	}
	cfg.PP = l.PP
	t := &trainer{cfg: cfg, job: job, sched: l.Sched, cut: l.Cut, pRank: job.Rank % cfg.PP, dRank: job.Rank / cfg.PP}
	if err := t.setup(ctx); err != nil {
		return nil, err
	}
	// On an error the rank returns at once; the agent then stops the others,
	// so the first error stays the root cause of the summary.
	return t.loop(ctx)
}

func (t *trainer) setup(ctx context.Context) error {
	c := t.cfg
	if t.job.Backend == nil {
		return errors.New("no compute backend")
	}
	var err error
	if t.corpus, err = LoadData(c); err != nil {
		return err
	}
	t.stages, t.opts = map[int]*models.Stage{}, map[int]models.Optimizer{}
	t.order = t.sched.StagesOf(t.pRank)
	for _, s := range t.order {
		st, err := models.NewStage(c.Model, t.cut, s, t.job.Backend, models.StageOptions{Seed: c.Seed, Recompute: c.Recompute})
		if err != nil {
			return fmt.Errorf("stage %d: %w", s, err)
		}
		if c.InitFrom != "" {
			if err := st.InitFrom(c.InitFrom); err != nil {
				return fmt.Errorf("--init-from %s: %w", c.InitFrom, err)
			}
		}
		st.SetLossScale(float32(1 / float64(c.DP*c.Micro)))
		t.stages[s] = st
		if t.opts[s], err = models.NewOptimizer(c.Optimizer, c.WeightDecay); err != nil {
			return fmt.Errorf("--optimizer: %w", err)
		}
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
		Sched: t.sched, PRank: t.pRank, Stages: t.execSt, Comm: t.job.Comm,
		Peer:      func(p int) int { return t.world(p, t.dRank) },
		First:     t.dRank * c.Micro,
		MicroSize: c.MicroSize,
		Timeout:   c.Timeout,
		Stall:     t.job.Stall,
	}
	if c.DP > 1 {
		t.exec.OnLastBackward = t.startReduce
	}
	return t.alignClocks(ctx)
}

// startReduce sends stage s's summed gradient to the other replicas and posts
// the receives of theirs, as soon as the stage's last backward is done.
func (t *trainer) startReduce(s int) error {
	st := t.stages[s]
	if t.dp == nil {
		t.dp = map[int]*dpReduce{}
	}
	r := t.dp[s]
	if r == nil {
		r = &dpReduce{bufs: make([][]float32, t.cfg.DP)}
		for d := range r.bufs {
			if d != t.dRank {
				r.bufs[d] = make([]float32, len(st.GradBuffer()))
			}
		}
		t.dp[s] = r
	}
	r.bufs[t.dRank] = st.GradBuffer()
	r.h = r.h[:0]
	tag := collective.Tag{Kind: collective.Data, Chunk: uint16(s), Step: uint32(t.curStep)}
	var ops []collective.Op
	for d := range t.cfg.DP {
		if d == t.dRank {
			continue
		}
		peer := t.world(t.pRank, d)
		ops = append(ops, collective.SendOp(peer, tag, collective.F32(r.bufs[t.dRank])), collective.RecvOp(peer, tag, collective.F32(r.bufs[d])))
	}
	r.h = append(r.h, t.job.Comm.Batch(ops...))
	return nil
}

// finishReduce waits for every stage's exchange and sums the replicas in
// replica order with the accumulator's tree (models.TreeSum), so dp replicas
// give the bits of one process accumulating all their micro-batches.
func (t *trainer) finishReduce(ctx context.Context, step int) error {
	for _, s := range t.order {
		r := t.dp[s]
		if r == nil {
			return fmt.Errorf("step %d: stage %d never finished its backward", step, s)
		}
		for _, h := range r.h {
			wctx, cancel := t.waitCtx(ctx)
			err := h.Wait(wctx)
			cancel()
			if err != nil {
				return fmt.Errorf("step %d: data-parallel gradient exchange of stage %d: %w", step, s, err)
			}
		}
		// TreeSum adds in place into parts[0], which is our own gradient on
		// replica 0 and replica 0's received one elsewhere (copied back).
		own := t.stages[s].GradBuffer()
		parts := make([][]float32, len(r.bufs))
		copy(parts, r.bufs)
		sum, err := models.TreeSum(t.job.Backend, parts)
		if err != nil {
			return fmt.Errorf("step %d: stage %d: %w", step, s, err)
		}
		if &sum[0] != &own[0] {
			copy(own, sum)
		}
	}
	return nil
}

func (t *trainer) waitCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	if t.cfg.Timeout > 0 {
		return context.WithTimeout(ctx, t.cfg.Timeout)
	}
	return context.WithCancel(ctx)
}

// syncTied makes the tied embedding and LM head gradients embedding + head on
// both the first and the last stage (models.AddTiedGrads's order).
func (t *trainer) syncTied(ctx context.Context, step int) error {
	if !t.cfg.Model.Tied {
		return nil
	}
	S := t.sched.Stages()
	first, last := t.stages[0], t.stages[S-1]
	var emb, head *models.Param
	for _, p := range t.cfg.Model.Params() {
		if p.TiedTo != "" {
			if last != nil {
				head = last.Param(p.Name)
			}
			if first != nil {
				emb = first.Param(p.TiedTo)
			}
		}
	}
	switch {
	case first != nil && last != nil && first == last:
		first.SumLocalTiedGrads()
		return nil
	case emb != nil && head != nil:
		models.AddTiedGrads(emb.Grad.Data, emb.Grad.Data, head.Grad.Data)
		copy(head.Grad.Data, emb.Grad.Data)
		return nil
	case emb == nil && head == nil:
		return nil
	}
	peerStage := S - 1
	mine, recv := emb, []float32(nil)
	if head != nil {
		peerStage, mine = 0, head
	}
	peer := t.world(t.sched.Placement[peerStage], t.dRank)
	recv = make([]float32, len(mine.Grad.Data))
	tag := collective.Tag{Kind: collective.Control, Chunk: chunkTied, Step: uint32(step)}
	wctx, cancel := t.waitCtx(ctx)
	defer cancel()
	h := t.job.Comm.Batch(collective.SendOp(peer, tag, collective.F32(mine.Grad.Data)), collective.RecvOp(peer, tag, collective.F32(recv)))
	if err := h.Wait(wctx); err != nil {
		return fmt.Errorf("step %d: tied embedding exchange with rank %d: %w", step, peer, err)
	}
	if head != nil {
		models.AddTiedGrads(head.Grad.Data, recv, head.Grad.Data)
	} else {
		models.AddTiedGrads(emb.Grad.Data, emb.Grad.Data, recv)
	}
	return nil
}

// reduceScalars all-reduces, over the world, every parameter's Σgrad² (given
// by replica 0 only), every global micro-batch's loss (given by the last
// stage of its replica) and how many ranks were asked to stop. Each gradient
// and loss entry has exactly one non-zero contributor, so the sum is exact
// whatever order the all-reduce adds in.
func (t *trainer) reduceScalars(ctx context.Context, step int, losses map[int]float64, stop bool) (norm, loss float64, stopAll bool, err error) {
	n, nl := len(t.names), t.cfg.DP*t.cfg.Micro
	buf := make([]float64, n+nl+1)
	if stop {
		buf[n+nl] = 1
	}
	if t.dRank == 0 {
		sums := map[string]float64{}
		for _, s := range t.order {
			for name, v := range models.GradSumSquares(t.stages[s].Params()) {
				sums[name] = v
			}
		}
		for i, name := range t.names {
			buf[i] = sums[name]
		}
	}
	for g, l := range losses {
		buf[n+g] = l
	}
	wctx, cancel := t.waitCtx(ctx)
	defer cancel()
	if err := t.job.Comm.AllReduce(wctx, collective.F64(buf), collective.Sum); err != nil {
		return 0, 0, false, fmt.Errorf("step %d: all-reduce of gradient norm and losses: %w", step, err)
	}
	sums := make(map[string]float64, n)
	for i, name := range t.names {
		sums[name] = buf[i]
	}
	var total float64
	for _, l := range buf[n : n+nl] {
		total += l
	}
	return models.GlobalNorm(sums), total / float64(nl), buf[n+nl] > 0, nil
}

func (t *trainer) loop(ctx context.Context) (*Result, error) {
	c := t.cfg
	first, err := t.restore(ctx)
	if err != nil {
		return nil, err
	}
	lrs := models.LRSchedule{Peak: c.LR, Min: c.MinLR, Warmup: c.Warmup, Total: c.Steps}
	res := &Result{FirstStep: first, Steps: c.Steps}
	tokensPerStep := float64(c.DP * c.Micro * c.MicroSize * c.Model.Seq)
	batches := func(g int) ([]int32, []int32, error) {
		return t.corpus.Batch(c.Seed, t.curStep, g, c.MicroSize, c.Model.Seq)
	}
	for step := first; step < c.Steps; step++ {
		t.curStep = step
		start, cpu0 := time.Now(), cpuTime()
		sr, err := t.exec.Step(ctx, step, batches)
		if err != nil {
			return nil, err
		}
		if c.DP > 1 {
			if err := t.finishReduce(ctx, step); err != nil {
				return nil, err
			}
		}
		if err := t.syncTied(ctx, step); err != nil {
			return nil, err
		}
		norm, loss, stop, err := t.reduceScalars(ctx, step, sr.Losses, t.job.Stop != nil && t.job.Stop())
		if err != nil {
			return nil, err
		}
		lr := lrs.At(step)
		scale := models.ClipScale(norm, c.Clip)
		for _, s := range t.order {
			if err := t.opts[s].Step(t.stages[s].Params(), lr, scale); err != nil {
				return nil, fmt.Errorf("step %d: optimizer of stage %d: %w", step, s, err)
			}
		}
		var val *float64
		last := step == c.Steps-1
		stop = stop && !last
		if (c.EvalEvery > 0 && (step+1)%c.EvalEvery == 0) || last {
			v, err := t.evaluate(ctx, step)
			if err != nil {
				return nil, err
			}
			val = v
		}
		if (c.CheckpointEvery > 0 && (step+1)%c.CheckpointEvery == 0) || ((last || stop) && c.CheckpointDir != "") {
			dir, err := t.save(ctx, step+1)
			if err != nil {
				return nil, err
			}
			res.Checkpoint = dir
		}
		stepS := time.Since(start).Seconds()
		rec, err := t.report(ctx, step, sr, (cpuTime() - cpu0).Seconds())
		if err != nil {
			return nil, err
		}
		if t.job.Rank == 0 {
			rec.Loss, rec.ValLoss, rec.GradNorm, rec.LR = loss, val, norm, lr
			rec.StepS = stepS
			rec.TokensPerS = tokensPerStep / stepS
			res.Records = append(res.Records, *rec)
			if t.job.Report != nil {
				t.job.Report(*rec)
			}
		}
		if stop {
			res.Steps, res.Stopped = step+1, true
			break
		}
	}
	return res, nil
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
