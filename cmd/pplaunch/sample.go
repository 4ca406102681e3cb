package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/pplaunch/pplaunch/collective"
	"github.com/pplaunch/pplaunch/contract"
	"github.com/pplaunch/pplaunch/launch"
	"github.com/pplaunch/pplaunch/ranks"
)

// sampleCmd is `pplaunch [launcher flags] sample --from CKPT`: text from a
// checkpoint. One rank holds the whole model; N ranks are an N-stage
// pipeline (a uniform cut), each loading its stage from the checkpoint,
// which may have been saved with any layout.
type sampleCmd struct {
	From string `arg:"--from,required" placeholder:"CKPT" help:"checkpoint directory, or a root of them (the newest complete one)"`
	genFlags
	Seed    *uint64       `arg:"--seed" help:"of the sampling RNG [default: the run's --seed, as train's samples]"`
	Data    string        `arg:"--data" placeholder:"PATH" help:"corpus whose validation split starts the default prompt [default: the run's]"`
	Timeout time.Duration `arg:"--timeout" default:"5m" help:"deadline of every wait"`
}

// open reads the checkpoint's manifest: the model, and from the saved
// configuration the seed and corpus of the run, which --data and --seed
// override.
func (c *sampleCmd) open() (*ranks.SampleSource, error) {
	src, err := ranks.OpenSampleSource(c.From)
	if err != nil {
		return nil, err
	}
	if c.Data != "" {
		src.Data = c.Data
	}
	if c.Seed != nil {
		src.Seed = *c.Seed
	}
	return src, nil
}

// run checks the flags and the checkpoint in the agent (one message, exit
// code 2, before any rank starts), then runs the ranks.
func (c *sampleCmd) run(f launch.Flags, argv []string, stdout, stderr io.Writer) int {
	if !f.Direct && os.Getenv(contract.EnvRole) != contract.RoleRank {
		src, err := c.open()
		if err == nil {
			_, err = c.genFlags.options(src.Model.Vocab, src.Seed)
		}
		if err != nil {
			fmt.Fprintln(stderr, "pplaunch: sample:", err)
			return 2
		}
	}
	return runAsRanks(f, argv, stdout, stderr, c.job(stdout))
}

func (c *sampleCmd) job(stdout io.Writer) func(ctx context.Context, r *ranks.Rank) error {
	return func(ctx context.Context, r *ranks.Rank) error {
		src, err := c.open()
		if err != nil {
			return fmt.Errorf("sample: %w", err)
		}
		o, err := c.genFlags.options(src.Model.Vocab, src.Seed)
		if err != nil {
			return fmt.Errorf("sample: %w", err)
		}
		if o.Prompt == nil {
			if o.Prompt, err = src.DefaultPrompt(); err != nil {
				return fmt.Errorf("sample: %w", err)
			}
		}
		stage, err := src.LoadStage(r.Rank, r.WorldSize)
		if err != nil {
			return fmt.Errorf("sample: %w", err)
		}
		sm := ranks.StageSampler(r.Rank, r.WorldSize, stage, c.Timeout)
		if r.WorldSize > 1 {
			comm, err := r.JoinTCP(ctx, collective.TCPOptions{Options: collective.Options{Timeout: c.Timeout}})
			if err != nil {
				return err
			}
			defer comm.Close()
			sm.Comm = comm
		}
		toks, err := sm.Generate(ctx, 0, o.Prompt, o)
		if err != nil {
			return err
		}
		if r.Rank == 0 {
			fmt.Fprintf(stdout, "sample from %s (step %d, seed %d): %s\n", src.Dir, src.Manifest.Step, src.Seed, ranks.FormatSample(src.Model.Vocab, o.Prompt, toks))
		}
		return nil
	}
}
