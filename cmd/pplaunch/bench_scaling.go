package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"

	"github.com/alexflint/go-arg"

	"github.com/pplaunch/pplaunch/bench"
	"github.com/pplaunch/pplaunch/launch/netns"
	"github.com/pplaunch/pplaunch/runconfig"
)

// benchScalingCmd is `pplaunch bench scaling [FLAGS] -- TRAIN FLAGS`: the
// training run at each size, one table row per size.
type benchScalingCmd struct {
	Nodes       string        `arg:"--nodes" placeholder:"N,..." help:"node counts [default: 1, 2, 4... up to --netns N or the Slurm allocation's nodes; 1 on one machine]"`
	NProc       string        `arg:"--nproc" placeholder:"N,..." help:"ranks per node [default: 1,2,4 on one machine, 1 across hosts]"`
	NetNS       int           `arg:"--netns" placeholder:"N" help:"simulate N hosts on this machine: network namespaces joined by a bridge (needs root)"`
	LinkRate    string        `arg:"--link-rate" placeholder:"RATE" help:"with --netns: limit each host's link to RATE each way (tc tbf), e.g. 10gbit, 200mbit"`
	LinkDelay   durationValue `arg:"--link-delay" placeholder:"D" help:"with --netns: delay each host's outgoing packets by D (tc netem, where the kernel has it), e.g. 1ms"`
	Mode        string        `arg:"--mode" default:"weak" help:"weak: the global batch grows with the world; strong: it stays the smallest size's"`
	Grow        string        `arg:"--grow" default:"pp" help:"the dimension that grows with the world: pp (the pipeline deepens; dp from train's --dp) or dp (replicas are added; pp from train's --pp, default the smallest world)"`
	Steps       int           `arg:"--steps" default:"5" help:"measured steps per size"`
	WarmupSteps int           `arg:"--warmup-steps" default:"2" help:"steps run first at each size and left out (allocation, connections, caches)"`
	JSON        bool          `arg:"--json" help:"print the report as JSON instead of the table"`
	CSV         string        `arg:"--csv" placeholder:"FILE" help:"also write the rows as CSV"`
	SVG         string        `arg:"--svg" placeholder:"FILE" help:"also draw the scaling curve and each size's step (compute, transfer, idle; predicted beside) as SVG"`
	Out         string        `arg:"--out" placeholder:"DIR" help:"keep each size's logs, metrics and profile here [default: a temporary directory, removed unless a size fails]"`
	Timeout     durationValue `arg:"--timeout" default:"30m" help:"give up on a size after this long"`

	train []string // the train flags, after --
}

// scalingExamples follow bench scaling's help and usage: go-arg has no
// place for the train flags after --.
const scalingExamples = `
The train flags go after --:
  pplaunch bench scaling --nproc 1,2,4 -- --layers 8 --schedule zb-h1       sizes on this machine
  pplaunch bench scaling --netns 4 --nproc 1 --link-rate 10gbit --svg s.svg -- --layers 8
                                                  4 simulated hosts (root), links of 10 Gbit/s
  sbatch examples/slurm/scaling.sbatch --mode strong -- --layers 16          the allocation's nodes
`

// scalingOwned are the train flags bench scaling sets at every size
// (--microbatches too, but as given it is the smallest size's).
var scalingOwned = []string{"--steps", "--metrics", "--profile", "--eval-every", "--resume", "--checkpoint-dir",
	"--checkpoint-every", "--trace", "--trace-svg", "--metrics-addr", "--sample-every"}

func (c *benchScalingCmd) run(ctx context.Context, stdout, stderr io.Writer) error {
	s, err := c.prepare(os.Getenv)
	if err != nil {
		return exitError{code: 2, err: err}
	}
	dir, keep := c.Out, c.Out != ""
	if dir == "" {
		if dir, err = os.MkdirTemp("", "pplaunch-scaling-"); err != nil {
			return err
		}
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("--out: %w", err)
	}
	drv := bench.ScalingDriver{Target: s.target, Sizes: s.sizes, Mode: bench.ScalingMode(c.Mode), Grow: c.Grow, Train: c.train, Args: c.trainArgs,
		Schedule: s.base.Schedule, Virtual: s.base.Virtual, Recompute: s.base.Recompute, Warmup: c.WarmupSteps, Measured: c.Steps,
		Timeout: c.Timeout.D(), LinkRate: c.LinkRate, Rate: s.rate, LinkDelay: c.LinkDelay.D()}
	rep, err := drv.Run(ctx, dir, stderr)
	if err != nil {
		keep = true
	}
	if len(rep.Rows) > 0 {
		err = errors.Join(err, c.write(rep, stdout))
	}
	if keep {
		fmt.Fprintf(stderr, "bench scaling: logs, metrics and profiles in %s\n", dir)
	} else {
		os.RemoveAll(dir)
	}
	return err
}

// scalingSetup is a checked scaling run: where, the sizes, the base train
// configuration.
type scalingSetup struct {
	target bench.ScalingTarget
	sizes  []bench.ScalingSize
	base   *trainCmd
	rate   uint64 // bits per second of each simulated link; 0: as fast as it goes
}

// prepare checks everything before anything runs: the flags, the train
// flags, and the train configuration at every size.
func (c *benchScalingCmd) prepare(getenv func(string) string) (*scalingSetup, error) {
	if c.Steps < 1 || c.WarmupSteps < 0 {
		return nil, fmt.Errorf("--steps %d --warmup-steps %d: want at least one measured step and no negative warm-up", c.Steps, c.WarmupSteps)
	}
	t, err := bench.ChooseTarget(c.NetNS, c.LinkRate != "" || c.LinkDelay.D() != 0, getenv)
	if err != nil {
		return nil, err
	}
	var nodes, nproc []int
	if c.Nodes != "" {
		if nodes, err = intList("--nodes", c.Nodes); err != nil {
			return nil, err
		}
	}
	if c.NProc != "" {
		if nproc, err = intList("--nproc", c.NProc); err != nil {
			return nil, err
		}
	}
	if nodes, nproc, err = bench.DefaultSizes(t, nodes, nproc); err != nil {
		return nil, err
	}
	base, err := parseTrainArgs(c.train)
	if err != nil {
		return nil, err
	}
	given := givenFlags(torchrunNames(c.train))
	owned := append(scalingOwned, "--"+c.Grow)
	for _, f := range owned {
		if given[f] {
			return nil, fmt.Errorf("train flag %s: bench scaling sets it at every size (--steps and --warmup-steps are bench scaling's own; --grow %s sets --%s)", f, c.Grow, c.Grow)
		}
	}
	sizes, err := scalingSizes(base, bench.ScalingPlan{Nodes: nodes, NProc: nproc, Mode: bench.ScalingMode(c.Mode), Grow: c.Grow})
	if err != nil {
		return nil, err
	}
	s := &scalingSetup{target: t, sizes: sizes, base: base}
	if s.rate, err = c.linkRate(); err != nil {
		return nil, err
	}
	for _, z := range sizes {
		tc, err := parseTrainArgs(c.trainArgs(z, "", ""))
		if err == nil {
			err = tc.checkWorld(z.World)
		}
		if err != nil {
			return nil, fmt.Errorf("at world %d (%s, pp %d × dp %d, %d micro-batches): %w", z.World, z.Where(), z.PP, z.DP, z.Micro, err)
		}
	}
	return s, t.CanRun(c.LinkDelay.D() > 0)
}

// scalingSizes lays out the sizes of plan with the batch of base's train
// flags at the smallest size: a --config file's train_batch_size is the
// smallest size's global batch.
func scalingSizes(base *trainCmd, plan bench.ScalingPlan) ([]bench.ScalingSize, error) {
	plan.Fixed = base.PP
	if plan.Grow == "pp" {
		plan.Fixed = base.DP
	}
	plan.Micro, plan.MicroSize = base.Microbatches, base.MicrobatchSize
	sizes, err := plan.Sizes()
	if err != nil || base.batch.Total == 0 {
		return sizes, err
	}
	b, err := runconfig.ResolveBatch(base.batch, runconfig.BatchSizes{Micro: base.MicrobatchSize, Accum: base.Microbatches, DP: sizes[0].DP})
	if err != nil {
		return nil, fmt.Errorf("%s at the smallest world %d (dp %d): %w", base.Config, sizes[0].World, sizes[0].DP, err)
	}
	plan.Micro, plan.MicroSize = b.Accum, b.Micro
	return plan.Sizes()
}

// trainArgs are the train flags of one size: the user's, then the size's
// layout and batch and the files the run leaves (none when dir is "").
func (c *benchScalingCmd) trainArgs(z bench.ScalingSize, metrics, profile string) []string {
	i := strconv.Itoa
	args := append(append([]string{}, c.train...), "--pp", i(z.PP), "--dp", i(z.DP), "--microbatches", i(z.Micro), "--microbatch-size", i(z.MicroSize),
		"--steps", i(c.WarmupSteps+c.Steps+1), "--eval-every", "0")
	if metrics != "" {
		args = append(args, "--metrics", metrics, "--profile", profile)
	}
	return args
}

// parseTrainArgs reads train flags as `pplaunch train` would, --config
// file included.
func parseTrainArgs(args []string) (*trainCmd, error) {
	var cl cli
	p, err := arg.NewParser(arg.Config{Program: "pplaunch", IgnoreEnv: true}, &cl)
	if err != nil {
		return nil, err
	}
	full := append([]string{"train"}, negativeValues(torchrunNames(args))...)
	if err := p.Parse(full); err != nil {
		if errors.Is(err, arg.ErrHelp) {
			return nil, fmt.Errorf("train flags: pplaunch train --help lists them")
		}
		return nil, fmt.Errorf("train flags: %s", explainUsage(err, full, p.SubcommandNames(), p.Subcommand()))
	}
	if cl.Train.Config != "" {
		if err := withConfigFile(&cl, full); err != nil {
			return nil, fmt.Errorf("train flags: %w", err)
		}
	}
	return cl.Train, nil
}

// write prints the table (or JSON) and writes the CSV and SVG files.
func (c *benchScalingCmd) write(rep bench.ScalingReport, stdout io.Writer) error {
	var err error
	if c.JSON {
		err = rep.WriteJSON(stdout)
	} else {
		err = rep.WriteText(stdout)
	}
	if c.CSV != "" {
		err = errors.Join(err, writeFileAtomic(c.CSV, rep.WriteCSV))
	}
	if c.SVG != "" {
		title := "pplaunch bench scaling on " + rep.Title
		err = errors.Join(err, writeFileAtomic(c.SVG, func(w io.Writer) error { return bench.WriteScalingSVG(w, rep.Rows, title, rep.Mode) }))
	}
	return err
}

// linkRate parses --link-rate (0: not limited).
func (c *benchScalingCmd) linkRate() (uint64, error) {
	if c.LinkRate == "" {
		return 0, nil
	}
	r, err := netns.ParseRate(c.LinkRate)
	if err != nil {
		return 0, fmt.Errorf("--link-rate: %w", err)
	}
	return r, nil
}
