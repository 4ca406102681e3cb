package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/pplaunch/pplaunch/bench"
	"github.com/pplaunch/pplaunch/launch"
)

// benchRendezvousCmd is `pplaunch bench rendezvous`: simulated agents join one
// store on loopback at once and form the world.
type benchRendezvousCmd struct {
	Agents        string        `arg:"--agents" default:"64,256,1024" help:"world sizes in agents, comma-separated"`
	RanksPerAgent int           `arg:"--ranks-per-agent" default:"4" help:"ranks each agent announces"`
	Rounds        int           `arg:"--rounds" default:"3" help:"worlds formed per size; the median is reported"`
	Timeout       time.Duration `arg:"--timeout" default:"60s" help:"give up on a world after this long"`
	JSON          bool          `arg:"--json" help:"print one JSON object per size"`
	Etcd          string        `arg:"--etcd" placeholder:"HOST:PORT" help:"the agents meet in the etcd at HOST:PORT (as --rdzv-backend etcd) instead of at the built-in store"`
}

func (c *benchRendezvousCmd) run(ctx context.Context, stdout io.Writer) error {
	agents, err := bench.ParseCounts("--agents", c.Agents)
	if err != nil {
		return exitError{code: 2, err: err} // a usage error
	}
	rows, err := bench.Rendezvous(ctx, bench.RendezvousOptions{Agents: agents, RanksPerAgent: c.RanksPerAgent,
		Rounds: c.Rounds, Timeout: c.Timeout, Join: launch.SimulatedJoin(c.Timeout, c.Etcd)})
	// The sizes that formed are printed even when a larger one did not.
	var werr error
	if c.JSON {
		werr = bench.WriteRendezvousJSON(stdout, rows)
	} else if len(rows) > 0 {
		if c.Etcd != "" {
			fmt.Fprintf(stdout, "the agents meet in etcd at %s, each with its own client (the TCP store below is the ranks', which they do not use here)\n", c.Etcd)
		}
		werr = bench.WriteRendezvousText(stdout, rows, c.RanksPerAgent, c.Rounds)
	}
	return errors.Join(err, werr)
}
