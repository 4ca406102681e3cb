package ranks

import (
	"context"
	"fmt"
	"io"
	"syscall"
	"time"

	"github.com/pplaunch/pplaunch/contract"
)

// Run runs job as the rank getenv describes (the agent's rank environment,
// or the one --direct made from srun's or mpirun's) and returns the
// process's exit code: 0 on success, 2 when the environment names no rank,
// 1 when the job fails, 128+signal when a signal ended it. rdzvTimeout
// bounds the wait for the store, and the last barrier.
//
// Its one signal watcher cancels the job's context at the first SIGINT,
// SIGTERM or SIGHUP (a job that must outlive it, to finish a step and
// write a checkpoint, watches for preemption: WatchPreemption). Under the
// agent it publishes its progress (contract.EnvProgress): each action of the
// stage loop and, when it fails, whose failure it is, so the agent's
// summary names the rank that failed first and what a silent rank was doing.
func Run(rdzvTimeout time.Duration, getenv func(string) string, stderr io.Writer, job func(ctx context.Context, r *Rank) error) int {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sigs := watchSignals(cancel, false)
	defer sigs.close()
	prog, err := OpenProgress(getenv(contract.EnvProgress))
	if err != nil {
		fmt.Fprintln(stderr, "pplaunch:", err) // the summary will know less; the job runs
	}
	id, err := IdentityFromEnv(getenv)
	if err != nil {
		fmt.Fprintln(stderr, "pplaunch:", err)
		prog.Failed(err, contract.FailError, -1)
		return 2
	}
	prog.Phase("connecting to the store")
	r, err := Connect(ctx, id, rdzvTimeout)
	if err != nil {
		fmt.Fprintln(stderr, "pplaunch:", err)
		class := contract.FailError
		if sigs.signal() != nil {
			class = contract.FailStopped
		}
		prog.Failed(err, class, -1)
		return 1
	}
	err = runJob(withSignals(WithProgress(ctx, prog), sigs), r, prog, sigs, rdzvTimeout, job)
	cancel()
	if s, ok := sigs.freeze().(syscall.Signal); ok {
		fmt.Fprintf(stderr, "pplaunch: rank %d: stopped by %s\n", id.Rank, contract.SignalName(s))
		return 128 + int(s)
	}
	if err != nil {
		fmt.Fprintf(stderr, "pplaunch: rank %d: %v\n", id.Rank, err)
		return 1
	}
	return 0
}

// runJob runs job on r and leaves the job: after a failure, this rank's
// account goes to its progress first, then to the other ranks (Fail); after
// a success, the ranks meet at the last barrier.
func runJob(ctx context.Context, r *Rank, prog *Progress, sigs *rankSignals, timeout time.Duration, job func(ctx context.Context, r *Rank) error) error {
	err := job(ctx, r)
	cctx, ccancel := context.WithTimeout(context.WithoutCancel(ctx), timeout)
	defer ccancel()
	if err != nil {
		// Before telling the others (Fail): the agent must find this rank's
		// own account no later than theirs.
		class, peer := Classify(err)
		if sigs.signal() != nil {
			class = contract.FailStopped
		}
		prog.Failed(err, class, peer)
		r.Fail(cctx, err)
		r.Close(cctx)
		return err
	}
	prog.Phase("closing: at the last barrier")
	if err = r.Close(cctx); err != nil {
		// Another rank's failure (or a rank that vanished) ended the barrier.
		prog.Failed(err, sigs.relayedOrStopped(), -1)
	}
	return err
}
