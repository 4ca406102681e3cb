package main

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/pplaunch/pplaunch/bench"
	"github.com/pplaunch/pplaunch/collective"
	"github.com/pplaunch/pplaunch/launch"
	"github.com/pplaunch/pplaunch/ranks"
)

// benchP2PCmd is `pplaunch --nproc N bench p2p`: point-to-point bandwidth and
// latency between ranks 0 and 1, beside a plain socket pair.
type benchP2PCmd struct {
	bench.P2POptions
	bench.LinkOptions
	Backend string        `arg:"--backend" default:"tcp" help:"tcp, nccl (GPU memory) or auto (nccl when every rank has a GPU and NCCL loads)"`
	Timeout durationValue `arg:"--timeout" default:"5m" help:"deadline of every transfer; seconds, or 30s, 5m"`
}

// benchAllReduceCmd is `pplaunch --nproc N bench allreduce`.
type benchAllReduceCmd struct {
	bench.AllReduceOptions
	bench.LinkOptions
	Backend string        `arg:"--backend" default:"tcp" help:"tcp, nccl (GPU memory) or auto (nccl when every rank has a GPU and NCCL loads)"`
	Segment bench.Size    `arg:"--segment" help:"piece size of the pipelined ring (default: 1 MiB when links poll, else 4 MiB)"`
	Timeout durationValue `arg:"--timeout" default:"5m" help:"deadline of every all-reduce; seconds, or 30s, 5m"`
}

func (c *benchP2PCmd) run(f launch.Flags, argv []string, stdout, stderr io.Writer) int {
	tcp, nccl := bench.P2PJobs(c.P2POptions, c.LinkOptions, c.Timeout.D(), joinTCP, stdout)
	return runBench(c.Backend, f, argv, stdout, stderr, tcp, nccl)
}

func (c *benchAllReduceCmd) run(f launch.Flags, argv []string, stdout, stderr io.Writer) int {
	tcp, nccl := bench.AllReduceJobs(c.AllReduceOptions, c.LinkOptions, c.Segment, c.Timeout.D(), joinTCP, stdout)
	return runBench(c.Backend, f, argv, stdout, stderr, tcp, nccl)
}

// runBench runs a communicator benchmark over the backend --backend
// chooses: a refusal is one message and exit 2 before any rank starts.
func runBench(flag string, f launch.Flags, argv []string, stdout, stderr io.Writer, tcp, nccl func(ctx context.Context, r *ranks.Rank) error) int {
	choice, err := resolveBackend(flag, "cuda", true, f, os.Getenv, os.Setenv, stderr)
	if err != nil {
		fmt.Fprintln(stderr, "pplaunch: bench:", err)
		return 2
	}
	if choice == "nccl" {
		return runAsRanks(f, argv, stdout, stderr, nccl)
	}
	return runAsRanks(f, argv, stdout, stderr, tcp)
}

// benchStoreCmd is `pplaunch [launcher flags] bench store`: every rank
// connects to the job's store, meets the others at a barrier and times round
// trips of each operation; rank 0 prints one row per rank (bench.StoreJob).
type benchStoreCmd struct {
	Iters int `arg:"--iters" default:"500" help:"round trips per operation and rank"`
}

// joinTCP opens the job's TCP communicator on r, as train does.
func joinTCP(ctx context.Context, r *ranks.Rank, opts collective.TCPOptions) (collective.Comm, error) {
	return r.JoinTCP(ctx, opts)
}
