package ranks

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/pplaunch/pplaunch/models"
	"github.com/pplaunch/pplaunch/models/data"
	"github.com/pplaunch/pplaunch/plan"
	"github.com/pplaunch/pplaunch/schedules"
)

// TrainConfig is one training job, the same on every rank.
type TrainConfig struct {
	Model    models.Config
	Schedule string // one of schedules.Names, or the name of a schedule file
	// ScheduleText is the content of the schedule file Schedule names (the
	// text form, or PyTorch's CSV when the name ends in .csv); empty when
	// Schedule is a built-in name.
	ScheduleText string
	Virtual      int // virtual stages per rank (interleaved: 2 when 0; zb-v: 2)
	Micro        int // micro-batches per step per data-parallel replica
	MicroSize    int // sequences per micro-batch
	PP, DP       int // 0: the world divided by the other (both 0: dp 1)
	Recompute    bool
	// Precision is fp32 (also when ""), tf32 or bf16: bf16 keeps every
	// activation and activation gradient in bfloat16, and sends them so.
	Precision models.Precision
	// Profile times every block's passes (the stages' Timing hook) and the
	// transfers; Train returns the medians on rank 0 (Result.Profile).
	Profile bool
	// Cut gives the blocks of each of stages stages (nil: models.Partition,
	// uniform).
	Cut       func(stages int) ([]int, error)
	Optimizer string
	LR, MinLR float64
	Warmup    int
	// LRSchedule is the shape after warmup (LRCosine when ""); WarmupStart
	// the rate warmup starts from; LRDecaySteps where the decay ends (0:
	// Steps). See LRAt.
	LRSchedule   string
	WarmupStart  float64
	LRDecaySteps int
	// AdamW's betas and eps (0: DefaultBeta1, ...), SGD's momentum (as given).
	Beta1, Beta2, Eps, Momentum float64
	WeightDecay                 float64
	Clip                        float64 // global gradient-norm clipping; 0 disables
	Steps                       int
	EvalEvery                   int // 0: only at the end
	EvalBatches                 int
	Seed                        uint64
	Data                        string // corpus path; "" the embedded default
	InitFrom                    string // safetensors weights to start from instead of the seed
	Timeout                     time.Duration
	// CheckTransfers compares every rank's transfer shapes before every
	// step (shapes.go), not only before the first on a device communicator.
	CheckTransfers bool
	// Zero is the ZeRO stage: 1 shards the optimizer state over the
	// data-parallel replicas (zero.go); 0 off. Pipelines allow no other.
	Zero int
	// Rebalance is --rebalance: off (""), auto or every:N, when the ranks
	// cut the model again from their measured block times (rebalance.go);
	// RebalanceThreshold the predicted step gain, a fraction, below which
	// the cut stays.
	Rebalance          string
	RebalanceThreshold float64

	CheckpointDir   string
	CheckpointEvery int
	Resume          bool
	Overwrite       bool // a new run removes the checkpoints already in CheckpointDir

	// Effective is the whole run's configuration as a JSON object (what
	// --config reads), saved in every checkpoint's manifest beside the model.
	Effective []byte
	// Agreed are the flags every rank must be given alike, with this run's
	// values, as the option table marks them (same:"true"): Flags compares
	// them between the ranks.
	Agreed []FlagValue
}

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
	if err := c.checkFinite(); err != nil {
		return l, err
	}
	if err := c.checkFlags(); err != nil {
		return l, err
	}
	switch {
	case size > 0 && l.PP == 0:
		l.DP = max(l.DP, 1)
		if size%l.DP != 0 {
			return l, fmt.Errorf("--dp %d does not divide the world of %d ranks", l.DP, size)
		}
		l.PP = size / l.DP
	case size > 0 && l.DP == 0:
		if l.PP > size {
			return l, fmt.Errorf("--pp %d needs at least %d ranks, but the world has %d", l.PP, l.PP, size)
		}
		if size%l.PP != 0 {
			return l, fmt.Errorf("--pp %d does not divide the world of %d ranks", l.PP, size)
		}
		l.DP = size / l.PP
	case size > 0 && l.PP*l.DP != size:
		return l, fmt.Errorf("--pp %d × --dp %d = %d ranks, but the world has %d", l.PP, l.DP, l.PP*l.DP, size)
	case l.PP == 0:
		return l, nil
	}
	if err := c.checkRebalance(l.DP); err != nil {
		return l, err
	}
	if !plan.MicroFitsDP(l.DP, c.Micro) {
		return l, fmt.Errorf("--dp %d needs --microbatches a power of two (got %d) so that results do not depend on the layout", l.DP, c.Micro)
	}
	sched, err := c.schedule(l.PP)
	if err != nil {
		return l, err
	}
	l.Sched = sched
	if st := sched.Stages(); st > c.Model.Layers {
		return l, c.tooFewBlocks(l.PP, st)
	}
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

// tooFewBlocks says why a model of fewer blocks than the schedule's stages
// cannot be cut, and what to change.
func (c *TrainConfig) tooFewBlocks(pp, stages int) error {
	L := c.Model.Layers
	fixes := []string{fmt.Sprintf("--layers %d or more", stages)}
	ranks := func(n int) string {
		if n <= 1 {
			return "--pp 1"
		}
		return fmt.Sprintf("--pp %d or fewer", n)
	}
	if stages > pp {
		fixes = append(fixes, ranks(L/(stages/pp)))
		if c.Schedule == "interleaved" {
			fixes = append(fixes, "a schedule with one stage per rank (--schedule 1f1b or zb-h1)")
		} else {
			fixes = append(fixes, "--schedule zb-h1 (one stage per rank)")
		}
	} else {
		fixes = append(fixes, ranks(L))
	}
	return fmt.Errorf("--schedule %s on --pp %d runs %d stages (%d per rank), but the model has %d blocks: each stage needs one; give %s",
		c.Schedule, pp, stages, stages/pp, L, strings.Join(fixes, ", or "))
}

// schedule is the run's schedule for pp pipeline ranks: generated, or the
// file's, loaded (lowered when it has no transfers), validated and checked
// against the run's ranks, micro-batches and virtual stages.
func (c *TrainConfig) schedule(pp int) (*schedules.Schedule, error) {
	if c.ScheduleText == "" {
		s, err := schedules.Generate(c.Schedule, pp, c.Micro, c.Virtual)
		if err != nil {
			return nil, fmt.Errorf("--schedule %s with --pp %d, --microbatches %d, --virtual %d: %w", c.Schedule, pp, c.Micro, c.Virtual, err)
		}
		return s, nil
	}
	s, err := schedules.Load(c.Schedule, c.ScheduleText)
	if err != nil {
		return nil, fmt.Errorf("--schedule %w", err)
	}
	if err := schedules.Fit(s, pp, c.Micro, c.Virtual); err != nil {
		return nil, fmt.Errorf("--schedule %s does not fit this run: %w", c.Schedule, err)
	}
	return s, nil
}

// LoadData opens the corpus c.Data names (the embedded one when empty) for
// the model's vocabulary and checks that its splits hold a sequence of
// c.Model.Seq tokens.
func LoadData(c TrainConfig) (*data.Corpus, error) {
	name := c.Data
	if name == "" {
		name = data.DefaultName
	}
	corpus, err := data.Open(c.Data, c.Model.Vocab)
	if err != nil {
		return nil, fmt.Errorf("--data %s: %w", name, err)
	}
	unit, val := corpus.Unit(), "the validation split"
	if !corpus.Presplit() {
		val += " (the last tenth)"
	}
	if n := corpus.TrainLen(); n < c.Model.Seq+1 {
		return nil, fmt.Errorf("--data %s: the training split has %d %s, too few for --seq %d (needs %d)", name, n, unit, c.Model.Seq, c.Model.Seq+1)
	}
	if n := corpus.ValLen(); c.EvalBatches > 0 && n < c.Model.Seq+1 {
		return nil, fmt.Errorf("--data %s: %s has %d %s, too few for --seq %d (needs %d; or --eval-batches 0)", name, val, n, unit, c.Model.Seq, c.Model.Seq+1)
	}
	return corpus, nil
}

// checkFlags checks what does not depend on the world size.
func (c *TrainConfig) checkFlags() error {
	switch {
	case c.PP < 0 || c.DP < 0:
		return fmt.Errorf("--pp %d and --dp %d must be at least 1 (or left out: the world divided by the other)", c.PP, c.DP)
	case c.Micro < 1:
		return fmt.Errorf("--microbatches %d must be at least 1", c.Micro)
	case c.MicroSize < 1:
		return fmt.Errorf("--microbatch-size %d must be at least 1", c.MicroSize)
	case c.LR < 0 || c.MinLR < 0 || c.MinLR > c.LR:
		return fmt.Errorf("--lr %g and --min-lr %g: want 0 <= --min-lr <= --lr", c.LR, c.MinLR)
	case c.CheckpointDir == "" && (c.CheckpointEvery > 0 || c.Resume || c.Overwrite):
		return errors.New("--checkpoint-every, --overwrite and --resume need --checkpoint-dir")
	case c.Resume && c.Overwrite:
		return errors.New("--resume continues the run in --checkpoint-dir, --overwrite removes it: give one")
	}
	if _, err := models.ParsePrecision(string(c.Precision)); err != nil {
		return err
	}
	if c.Steps == 0 {
		return errors.New("--steps 0 trains nothing: give --steps 1 or more (with --resume, the total to reach, counting the steps done)")
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
	if err := c.checkOptim(); err != nil {
		return err
	}
	if err := c.checkZero(); err != nil {
		return err
	}
	if err := c.checkRebalance(c.DP); err != nil {
		return err
	}
	return c.Model.Validate()
}
