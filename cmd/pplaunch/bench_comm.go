package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/pplaunch/pplaunch/bench"
	"github.com/pplaunch/pplaunch/collective"
	"github.com/pplaunch/pplaunch/ranks"
)

// benchP2PCmd is `pplaunch --nproc N bench p2p`: point-to-point bandwidth and
// latency between ranks 0 and 1, beside a plain socket pair.
type benchP2PCmd struct {
	bench.P2POptions
	Timeout time.Duration `arg:"--timeout" default:"5m" help:"deadline of every transfer"`
}

// benchAllReduceCmd is `pplaunch --nproc N bench allreduce`.
type benchAllReduceCmd struct {
	bench.AllReduceOptions
	Timeout time.Duration `arg:"--timeout" default:"5m" help:"deadline of every all-reduce"`
}

func (c *benchP2PCmd) job(stdout io.Writer) func(ctx context.Context, r *ranks.Rank) error {
	return commJob(c.Timeout, func(ctx context.Context, comm collective.Comm) error {
		return bench.RunP2P(ctx, comm, c.P2POptions, stdout)
	})
}

func (c *benchAllReduceCmd) job(stdout io.Writer) func(ctx context.Context, r *ranks.Rank) error {
	return commJob(c.Timeout, func(ctx context.Context, comm collective.Comm) error {
		return bench.RunAllReduce(ctx, comm, c.AllReduceOptions, stdout)
	})
}

// commJob is a rank job that opens the job's communicator, runs f and closes it.
func commJob(timeout time.Duration, f func(ctx context.Context, comm collective.Comm) error) func(ctx context.Context, r *ranks.Rank) error {
	return func(ctx context.Context, r *ranks.Rank) error {
		if timeout <= 0 {
			return fmt.Errorf("--timeout %v: must be positive", timeout)
		}
		comm, err := openComm(ctx, r, timeout)
		if err != nil {
			return err
		}
		defer comm.Close()
		return f(ctx, comm)
	}
}
