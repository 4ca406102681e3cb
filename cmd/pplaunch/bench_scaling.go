package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/alexflint/go-arg"

	"github.com/pplaunch/pplaunch/bench"
	"github.com/pplaunch/pplaunch/ranks/report"
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

func (c *benchScalingCmd) run(ctx context.Context, stdout, stderr io.Writer) error {
	q := c.request()
	s, err := q.Prepare(os.Getenv)
	if err != nil {
		return exitError{code: 2, err: err}
	}
	return q.Run(ctx, s, c.Out, stderr, func(rep bench.ScalingReport) error { return c.write(rep, stdout) })
}

// request is the run as asked, its train flags read by train's parser.
func (c *benchScalingCmd) request() bench.ScalingRequest {
	return bench.ScalingRequest{Nodes: c.Nodes, NProc: c.NProc, NetNS: c.NetNS, LinkRate: c.LinkRate, LinkDelay: c.LinkDelay.D(),
		Mode: bench.ScalingMode(c.Mode), Grow: c.Grow, Steps: c.Steps, Warmup: c.WarmupSteps, Timeout: c.Timeout.D(),
		Train: c.train, Given: givenFlags(torchrunNames(c.train)), Parse: parseScalingTrain, Check: checkTrainWorld}
}

// parseScalingTrain is what bench scaling reads of its train flags.
func parseScalingTrain(args []string) (bench.ScalingTrain, error) {
	t, err := parseTrainArgs(args)
	if err != nil {
		return bench.ScalingTrain{}, err
	}
	return bench.ScalingTrain{PP: t.PP, DP: t.DP, Micro: t.Microbatches, MicroSize: t.MicrobatchSize, Batch: t.batch, Config: t.Config,
		Schedule: t.Schedule, Virtual: t.Virtual, Recompute: t.Recompute}, nil
}

// checkTrainWorld checks train flags for a world of world ranks, as the
// agent of `pplaunch train` does.
func checkTrainWorld(args []string, world int) error {
	t, err := parseTrainArgs(args)
	if err == nil {
		err = t.checkWorld(world)
	}
	return err
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
		err = errors.Join(err, report.WriteFileAtomic(c.CSV, rep.WriteCSV))
	}
	if c.SVG != "" {
		title := "pplaunch bench scaling on " + rep.Title
		err = errors.Join(err, report.WriteFileAtomic(c.SVG, func(w io.Writer) error { return bench.WriteScalingSVG(w, rep.Rows, title, rep.Mode) }))
	}
	return err
}
