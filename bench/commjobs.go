package bench

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/pplaunch/pplaunch/collective"
	"github.com/pplaunch/pplaunch/ranks"
)

// RankJob is a job every rank of a pplaunch job runs (pplaunch's rank jobs).
type RankJob = func(ctx context.Context, r *ranks.Rank) error

// OpenTCP opens the job's TCP communicator on rank r with opts (the one
// pplaunch train opens too).
type OpenTCP func(ctx context.Context, r *ranks.Rank, opts collective.TCPOptions) (collective.Comm, error)

// LinkOptions override how the TCP links are tuned, to measure the
// defaults against the alternatives (the flags of bench p2p and allreduce).
type LinkOptions struct {
	SocketBuffer Size `arg:"--socket-buffer" help:"SO_SNDBUF and SO_RCVBUF of every link (default: 256 KiB send buffer on same-host links while each rank has a CPU, else the kernel's)"`
	Autotune     bool `arg:"--autotune" help:"leave every socket buffer to the kernel's autotuning"`
	NoPoll       bool `arg:"--no-poll" help:"never poll sockets before parking"`
}

// TCPOptions are the communicator's options for l, with timeout the
// deadline of every wait; contradicting flags are refused naming both.
func (l LinkOptions) TCPOptions(timeout time.Duration) (collective.TCPOptions, error) {
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

// P2PJobs are bench p2p's two rank jobs, one driver (RunP2P) over either
// communicator: tcp with its buffers in host memory, the communicator
// opened by open with links; nccl with them in GPU memory (NCCLJob).
func P2PJobs(o P2POptions, links LinkOptions, timeout time.Duration, open OpenTCP, stdout io.Writer) (tcp, nccl RankJob) {
	opts, err := links.TCPOptions(timeout)
	tcp = commJob(opts, err, open, func(ctx context.Context, comm collective.Comm) error {
		return RunP2P(ctx, comm, Host, o, stdout)
	})
	nccl = NCCLJob(timeout, func(ctx context.Context, comm collective.Comm, mem DeviceMemory) error {
		return RunP2P(ctx, comm, OnGPU(mem), o, stdout)
	})
	return tcp, nccl
}

// AllReduceJobs are bench allreduce's two rank jobs, as P2PJobs; segment
// is the TCP ring's piece size (0: its default).
func AllReduceJobs(o AllReduceOptions, links LinkOptions, segment Size, timeout time.Duration, open OpenTCP, stdout io.Writer) (tcp, nccl RankJob) {
	opts, err := links.TCPOptions(timeout)
	opts.SegmentBytes = int(segment)
	tcp = commJob(opts, err, open, func(ctx context.Context, comm collective.Comm) error {
		return RunAllReduce(ctx, comm, Host, o, stdout)
	})
	nccl = NCCLJob(timeout, func(ctx context.Context, comm collective.Comm, mem DeviceMemory) error {
		return RunAllReduce(ctx, comm, OnGPU(mem), o, stdout)
	})
	return tcp, nccl
}

// commJob is a rank job that opens the job's communicator with opts (or
// fails with flagErr), runs f and closes it.
func commJob(opts collective.TCPOptions, flagErr error, open OpenTCP, f func(ctx context.Context, comm collective.Comm) error) RankJob {
	return func(ctx context.Context, r *ranks.Rank) error {
		if flagErr != nil {
			return flagErr
		}
		if opts.Timeout <= 0 {
			return fmt.Errorf("--timeout %v: must be positive", opts.Timeout)
		}
		comm, err := open(ctx, r, opts)
		if err != nil {
			return err
		}
		defer comm.Close()
		return f(ctx, comm)
	}
}
