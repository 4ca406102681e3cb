package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/alexflint/go-arg"
	"github.com/pplaunch/pplaunch/runconfig"
)

// withConfigFile re-reads the command line over train --config FILE: the
// flags' defaults, then the file (runconfig.Read), then the flags given (args, the launcher
// flags and subcommand as run parsed them). go-arg parses into the struct
// the file has filled with IgnoreDefault, so only the flags on the command
// line overwrite it.
func withConfigFile(c *cli, args []string) error {
	path := c.Train.Config
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("--config: %w", err)
	}
	var d cli
	p, err := arg.NewParser(arg.Config{Program: "pplaunch", IgnoreEnv: true}, &d)
	if err != nil {
		return err
	}
	if err := p.Parse([]string{"train"}); err != nil {
		return err
	}
	train := d.Train
	if train.batch, err = runconfig.Read(trainOptions(train), path, b, givenFlags(args)); err != nil {
		return err
	}
	merged := *c
	merged.Train = train
	p, err = arg.NewParser(arg.Config{Program: "pplaunch", IgnoreDefault: true}, &merged)
	if err != nil {
		return err
	}
	if err := p.Parse(args); err != nil {
		return err
	}
	*c = merged
	return nil
}

// givenFlags is the set of long flags written on the command line (their
// names only: --microbatches=8 and --microbatches 8 both give
// "--microbatches").
func givenFlags(args []string) map[string]bool {
	out := map[string]bool{}
	for _, a := range args {
		if a == "--" {
			break
		}
		if strings.HasPrefix(a, "--") {
			name, _, _ := strings.Cut(a, "=")
			out[name] = true
		}
	}
	return out
}

// resolveWorld finishes what the file leaves to the world's size (0: not
// known yet, as on one agent of several nodes: nothing is done): the batch
// arithmetic, with dp as the world and the pipeline give it (Plan reports a
// pipeline that does not divide the world).
func (c *trainCmd) resolveWorld(size int) error {
	if size == 0 || c.Config == "" {
		return nil
	}
	b, err := runconfig.ResolveBatch(c.batch, runconfig.BatchSizes{Micro: c.MicrobatchSize, Accum: c.Microbatches, DP: runconfig.WorldDP(size, c.PP, c.DP)})
	if err != nil {
		return fmt.Errorf("%s: %w", c.Config, err)
	}
	c.MicrobatchSize, c.Microbatches = b.Micro, b.Accum
	return nil
}
