package main

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/pplaunch/pplaunch/plan"
)

// planCmd is `pplaunch plan`: generate (or read), validate and simulate a
// pipeline schedule, and show its timeline. Its flags, their checks and
// its answers are package plan's (plan.Query); this reads and writes the
// files they name.
type planCmd struct {
	plan.Query
}

// run exits 2 when the flags (or the schedule they name) are wrong, as
// every command does for a usage error, and 1 when a file cannot be written.
func (c *planCmd) run(ctx context.Context, stdout, stderr io.Writer) error {
	usage := func(err error) error {
		if err == nil {
			return nil
		}
		return exitError{code: 2, err: err}
	}
	if err := c.Check(); err != nil {
		return usage(err)
	}
	if c.Profile != "" {
		p, err := readProfile(c.Profile)
		if err != nil {
			return usage(fmt.Errorf("plan: --profile %w", err))
		}
		return usage(c.WriteProfile(stdout, p))
	}
	if c.Compare {
		return usage(c.WriteCompare(stdout))
	}
	res, err := c.simulate()
	if err != nil {
		return usage(fmt.Errorf("plan: %w", err))
	}
	files, err := c.Files(res)
	for _, f := range files {
		if werr := os.WriteFile(f.Path, f.Data, 0o644); werr != nil {
			return fmt.Errorf("plan: %s: %w", f.Flag, werr)
		}
	}
	if err != nil {
		return err
	}
	return c.WriteSchedule(stdout, res)
}

// simulate is the schedule of --from FILE, or the built-in one, simulated.
func (c *planCmd) simulate() (*plan.Result, error) {
	if c.From == "" {
		return c.SimulateBuiltin()
	}
	text, err := os.ReadFile(c.From)
	if err != nil {
		return nil, err
	}
	return c.SimulateFile(string(text))
}

// readProfile reads a file that train --profile wrote.
func readProfile(path string) (*plan.Profile, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	p, err := plan.ReadProfile(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return p, nil
}
