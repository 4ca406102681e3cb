package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/pplaunch/pplaunch/bench"
	"github.com/pplaunch/pplaunch/collective"
	"github.com/pplaunch/pplaunch/launch"
	"github.com/pplaunch/pplaunch/ranks"
)

// benchP2PCmd is `pplaunch --nproc N bench p2p`: point-to-point bandwidth and
// latency between ranks 0 and 1, beside a plain socket pair.
type benchP2PCmd struct {
	bench.P2POptions
	linkFlags
	Backend string        `arg:"--backend" default:"tcp" help:"tcp, nccl (GPU memory) or auto (nccl when every rank has a GPU and NCCL loads)"`
	Timeout durationValue `arg:"--timeout" default:"5m" help:"deadline of every transfer; seconds, or 30s, 5m"`
}

// benchAllReduceCmd is `pplaunch --nproc N bench allreduce`.
type benchAllReduceCmd struct {
	bench.AllReduceOptions
	linkFlags
	Backend string        `arg:"--backend" default:"tcp" help:"tcp, nccl (GPU memory) or auto (nccl when every rank has a GPU and NCCL loads)"`
	Segment bench.Size    `arg:"--segment" help:"piece size of the pipelined ring (default: 1 MiB when links poll, else 4 MiB)"`
	Timeout durationValue `arg:"--timeout" default:"5m" help:"deadline of every all-reduce; seconds, or 30s, 5m"`
}

// linkFlags override how the TCP links are tuned, to measure the defaults
// against the alternatives.
type linkFlags struct {
	SocketBuffer bench.Size `arg:"--socket-buffer" help:"SO_SNDBUF and SO_RCVBUF of every link (default: 256 KiB send buffer on same-host links while each rank has a CPU, else the kernel's)"`
	Autotune     bool       `arg:"--autotune" help:"leave every socket buffer to the kernel's autotuning"`
	NoPoll       bool       `arg:"--no-poll" help:"never poll sockets before parking"`
}

func (l linkFlags) options(timeout time.Duration) (collective.TCPOptions, error) {
	o := collective.TCPOptions{Options: collective.Options{Timeout: timeout}, SocketBuffer: int(l.SocketBuffer)}
	if l.Autotune {
		if l.SocketBuffer > 0 {
			return o, fmt.Errorf("--autotune and --socket-buffer %v: choose one", l.SocketBuffer)
		}
		o.SocketBuffer = -1
	}
	if l.NoPoll {
		o.Poll = -1
	}
	return o, nil
}

func (c *benchP2PCmd) run(f launch.Flags, argv []string, stdout, stderr io.Writer) int {
	return runBench(c.Backend, f, argv, stdout, stderr, c.job(stdout), bench.NCCLJob(c.Timeout.D(), func(ctx context.Context, comm collective.Comm, mem bench.DeviceMemory) error {
		return bench.RunP2P(ctx, comm, bench.OnGPU(mem), c.P2POptions, stdout)
	}))
}

func (c *benchP2PCmd) job(stdout io.Writer) func(ctx context.Context, r *ranks.Rank) error {
	opts, err := c.options(c.Timeout.D())
	return commJob(opts, err, func(ctx context.Context, comm collective.Comm) error {
		return bench.RunP2P(ctx, comm, bench.Host, c.P2POptions, stdout)
	})
}

func (c *benchAllReduceCmd) run(f launch.Flags, argv []string, stdout, stderr io.Writer) int {
	return runBench(c.Backend, f, argv, stdout, stderr, c.job(stdout), bench.NCCLJob(c.Timeout.D(), func(ctx context.Context, comm collective.Comm, mem bench.DeviceMemory) error {
		return bench.RunAllReduce(ctx, comm, bench.OnGPU(mem), c.AllReduceOptions, stdout)
	}))
}

func (c *benchAllReduceCmd) job(stdout io.Writer) func(ctx context.Context, r *ranks.Rank) error {
	opts, err := c.options(c.Timeout.D())
	opts.SegmentBytes = int(c.Segment)
	return commJob(opts, err, func(ctx context.Context, comm collective.Comm) error {
		return bench.RunAllReduce(ctx, comm, bench.Host, c.AllReduceOptions, stdout)
	})
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

// commJob is a rank job that opens the job's communicator with opts (or
// fails with flagErr), runs f and closes it.
func commJob(opts collective.TCPOptions, flagErr error, f func(ctx context.Context, comm collective.Comm) error) func(ctx context.Context, r *ranks.Rank) error {
	return func(ctx context.Context, r *ranks.Rank) error {
		if flagErr != nil {
			return flagErr
		}
		if opts.Timeout <= 0 {
			return fmt.Errorf("--timeout %v: must be positive", opts.Timeout)
		}
		comm, err := collective.JoinTCP(ctx, r.Store, r.StoreAddr, r.Token, r.Rank, r.WorldSize, opts)
		if err != nil {
			return err
		}
		defer comm.Close()
		return f(ctx, comm)
	}
}

// benchStoreCmd is `pplaunch [launcher flags] bench store`: every rank
// connects to the job's store, meets the others at a barrier and times round
// trips of each operation; rank 0 prints one row per rank (bench.StoreJob).
type benchStoreCmd struct {
	Iters int `arg:"--iters" default:"500" help:"round trips per operation and rank"`
}
