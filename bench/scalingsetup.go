package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"time"

	"github.com/pplaunch/pplaunch/launch/netns"
	"github.com/pplaunch/pplaunch/runconfig"
)

// scalingOwned are the train flags bench scaling sets at every size
// (--microbatches too, but as given it is the smallest size's).
var scalingOwned = []string{"--steps", "--metrics", "--profile", "--eval-every", "--resume", "--checkpoint-dir",
	"--checkpoint-every", "--trace", "--trace-svg", "--metrics-addr", "--sample-every"}

// ScalingTrain is what a scaling run reads of its train flags, as pplaunch
// train's parser reads them.
type ScalingTrain struct {
	PP, DP, Micro, MicroSize int
	Batch                    runconfig.Batch // what --config gave of the batch sizes
	Config                   string          // the --config file, for messages
	Schedule                 string
	Virtual                  int
	Recompute                bool
}

// ScalingRequest is `pplaunch bench scaling` as asked: its own flags, and
// the train flags after -- with the train command's parser (cmd/pplaunch's).
type ScalingRequest struct {
	Nodes, NProc  string // counts, "1,2,4" ("": the defaults)
	NetNS         int    // simulated hosts (0: none)
	LinkRate      string // each simulated link's rate ("": not limited)
	LinkDelay     time.Duration
	Mode          ScalingMode
	Grow          string // "pp" or "dp"
	Steps, Warmup int    // measured and left-out steps per size
	Timeout       time.Duration
	Train         []string        // the train flags
	Given         map[string]bool // the train flags given, by their names
	// Parse reads train flags as pplaunch train would; Check checks them
	// for a world of world ranks.
	Parse func(args []string) (ScalingTrain, error)
	Check func(args []string, world int) error
}

// ScalingSetup is a checked scaling run: where, the sizes, the base train
// configuration.
type ScalingSetup struct {
	Target ScalingTarget
	Sizes  []ScalingSize
	Base   ScalingTrain
	Rate   uint64 // bits per second of each simulated link; 0: as fast as it goes
}

// Prepare checks everything before anything runs: the flags, the train
// flags, and the train configuration at every size.
func (q ScalingRequest) Prepare(getenv func(string) string) (*ScalingSetup, error) {
	if q.Steps < 1 || q.Warmup < 0 {
		return nil, fmt.Errorf("--steps %d --warmup-steps %d: want at least one measured step and no negative warm-up", q.Steps, q.Warmup)
	}
	t, err := ChooseTarget(q.NetNS, q.LinkRate != "" || q.LinkDelay != 0, getenv)
	if err != nil {
		return nil, err
	}
	nodes, nproc, err := q.counts(t)
	if err != nil {
		return nil, err
	}
	base, err := q.Parse(q.Train)
	if err != nil {
		return nil, err
	}
	for _, f := range append(scalingOwned, "--"+q.Grow) {
		if q.Given[f] {
			return nil, fmt.Errorf("train flag %s: bench scaling sets it at every size (--steps and --warmup-steps are bench scaling's own; --grow %s sets --%s)", f, q.Grow, q.Grow)
		}
	}
	sizes, err := scalingSizes(base, ScalingPlan{Nodes: nodes, NProc: nproc, Mode: q.Mode, Grow: q.Grow})
	if err != nil {
		return nil, err
	}
	s := &ScalingSetup{Target: t, Sizes: sizes, Base: base}
	if s.Rate, err = q.linkRate(); err != nil {
		return nil, err
	}
	for _, z := range sizes {
		if err := q.Check(q.TrainArgs(z, "", ""), z.World); err != nil {
			return nil, fmt.Errorf("at world %d (%s, pp %d × dp %d, %d micro-batches): %w", z.World, z.Where(), z.PP, z.DP, z.Micro, err)
		}
	}
	return s, t.CanRun(q.LinkDelay > 0)
}

// counts are the node counts and ranks per node asked for, or t's defaults.
func (q ScalingRequest) counts(t ScalingTarget) (nodes, nproc []int, err error) {
	if q.Nodes != "" {
		if nodes, err = ParseCounts("--nodes", q.Nodes); err != nil {
			return nil, nil, err
		}
	}
	if q.NProc != "" {
		if nproc, err = ParseCounts("--nproc", q.NProc); err != nil {
			return nil, nil, err
		}
	}
	return DefaultSizes(t, nodes, nproc)
}

// scalingSizes lays out the sizes of plan with the batch of base's train
// flags at the smallest size: a --config file's train_batch_size is the
// smallest size's global batch.
func scalingSizes(base ScalingTrain, plan ScalingPlan) ([]ScalingSize, error) {
	plan.Fixed = base.PP
	if plan.Grow == "pp" {
		plan.Fixed = base.DP
	}
	plan.Micro, plan.MicroSize = base.Micro, base.MicroSize
	sizes, err := plan.Sizes()
	if err != nil || base.Batch.Total == 0 {
		return sizes, err
	}
	b, err := runconfig.ResolveBatch(base.Batch, runconfig.BatchSizes{Micro: base.MicroSize, Accum: base.Micro, DP: sizes[0].DP})
	if err != nil {
		return nil, fmt.Errorf("%s at the smallest world %d (dp %d): %w", base.Config, sizes[0].World, sizes[0].DP, err)
	}
	plan.Micro, plan.MicroSize = b.Accum, b.Micro
	return plan.Sizes()
}

// TrainArgs are the train flags of one size: the user's, then the size's
// layout and batch and the files the run leaves (none when metrics is "").
func (q ScalingRequest) TrainArgs(z ScalingSize, metrics, profile string) []string {
	i := strconv.Itoa
	args := append(append([]string{}, q.Train...), "--pp", i(z.PP), "--dp", i(z.DP), "--microbatches", i(z.Micro), "--microbatch-size", i(z.MicroSize),
		"--steps", i(q.Warmup+q.Steps+1), "--eval-every", "0")
	if metrics != "" {
		args = append(args, "--metrics", metrics, "--profile", profile)
	}
	return args
}

// linkRate parses --link-rate (0: not limited).
func (q ScalingRequest) linkRate() (uint64, error) {
	if q.LinkRate == "" {
		return 0, nil
	}
	r, err := netns.ParseRate(q.LinkRate)
	if err != nil {
		return 0, fmt.Errorf("--link-rate: %w", err)
	}
	return r, nil
}

// Run runs the sizes of s, each one's logs, metrics and profile under out
// (a temporary directory when it is "", removed afterwards unless a size
// failed), and hands the rows of those that ran to write; the directory
// kept is named on stderr last.
func (q ScalingRequest) Run(ctx context.Context, s *ScalingSetup, out string, stderr io.Writer, write func(ScalingReport) error) error {
	dir, keep := out, out != ""
	var err error
	if dir == "" {
		if dir, err = os.MkdirTemp("", "pplaunch-scaling-"); err != nil {
			return err
		}
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("--out: %w", err)
	}
	drv := ScalingDriver{Target: s.Target, Sizes: s.Sizes, Mode: q.Mode, Grow: q.Grow, Train: q.Train, Args: q.TrainArgs,
		Schedule: s.Base.Schedule, Virtual: s.Base.Virtual, Recompute: s.Base.Recompute, Warmup: q.Warmup, Measured: q.Steps,
		Timeout: q.Timeout, LinkRate: q.LinkRate, Rate: s.Rate, LinkDelay: q.LinkDelay}
	rep, err := drv.Run(ctx, dir, stderr)
	if err != nil {
		keep = true
	}
	if len(rep.Rows) > 0 {
		err = errors.Join(err, write(rep))
	}
	if keep {
		fmt.Fprintf(stderr, "bench scaling: logs, metrics and profiles in %s\n", dir)
	} else {
		os.RemoveAll(dir)
	}
	return err
}
