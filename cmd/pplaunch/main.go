// Command pplaunch is one binary for pipeline-parallel training: the launcher
// (pplaunch --nproc 4 train), the worker each rank runs, the planner
// (pplaunch plan) and the benchmark driver (pplaunch bench ...).
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/alexflint/go-arg"
)

// cli is the whole command line. Launcher flags come first, then a subcommand.
type cli struct {
	Plan  *planCmd       `arg:"subcommand:plan" help:"generate, validate and simulate a pipeline schedule"`
	Bench *benchCmd      `arg:"subcommand:bench" help:"benchmarks"`
	Train *trainCmd      `arg:"subcommand:train" help:"pipeline-parallel training (run as ranks by the launcher)"`
	Ckpt  *checkpointCmd `arg:"subcommand:checkpoint" help:"tools over saved checkpoints"`
}

// benchCmd groups the benchmarks.
type benchCmd struct {
	Step *benchStepCmd `arg:"subcommand:step" help:"time one training step (forward, backward, AdamW) in one process"`
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run parses argv, runs the chosen command and returns the process exit code.
func run(argv []string, stdout, stderr io.Writer) int {
	var c cli
	p, err := arg.NewParser(arg.Config{Program: "pplaunch"}, &c)
	if err != nil {
		fmt.Fprintln(stderr, "pplaunch:", err)
		return 2
	}
	if err := p.Parse(argv); err != nil {
		switch {
		case errors.Is(err, arg.ErrHelp):
			p.WriteHelpForSubcommand(stdout, p.SubcommandNames()...)
			return 0
		default:
			fmt.Fprintln(stderr, "pplaunch:", err)
			p.WriteUsageForSubcommand(stderr, p.SubcommandNames()...)
			return 2
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	switch {
	case c.Plan != nil:
		err = c.Plan.run(ctx, stdout, stderr)
	case c.Train != nil:
		err = c.Train.run(ctx, stdout, stderr)
	case c.Ckpt != nil:
		err = c.Ckpt.run(ctx, stdout, stderr)
	case c.Bench != nil && c.Bench.Step != nil:
		err = c.Bench.Step.run(ctx, stdout, stderr)
	default:
		p.WriteHelp(stdout)
		return 2
	}
	if err != nil {
		fmt.Fprintln(stderr, "pplaunch:", err)
		return 1
	}
	return 0
}
