package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"sync/atomic"
	"syscall"

	"github.com/pplaunch/pplaunch/contract"
	"github.com/pplaunch/pplaunch/launch"
	"github.com/pplaunch/pplaunch/ranks"
)

// How built-in rank jobs run (the contract for `train`, `bench p2p`, `bench
// allreduce`, `bench store`, ...): such a subcommand calls runAsRanks with its
// job. In a process that is not yet a rank, runAsRanks is the agent: it spawns
// --nproc copies of this same executable with the same argv and the rank
// environment (PPLAUNCH_ROLE=rank among it). In such a copy, or under
// --direct (srun/mpirun made this process a rank), runAsRanks reads the
// identity, connects to the job's store and runs the job. Launcher flags are
// parsed in both and ignored in a rank, except --rdzv-timeout (how long a rank
// waits for the store).
//
// runAsRanks returns the process exit code: the agent's (see launch.Run), or in
// a rank 0 on success, 1 when the job fails, 128+signal when a signal ended it.
func runAsRanks(f launch.Flags, argv []string, stdout, stderr io.Writer, job func(ctx context.Context, r *ranks.Rank) error) int {
	if os.Getenv(contract.EnvRole) == contract.RoleRank {
		return runRank(f, os.Getenv, stderr, job)
	}
	if f.Direct {
		env, err := launch.DirectEnv(f, os.Getenv)
		if err != nil {
			fmt.Fprintln(stderr, "pplaunch:", err)
			return 2
		}
		return runRank(f, func(k string) string {
			if v, ok := env[k]; ok {
				return v
			}
			return os.Getenv(k)
		}, stderr, job)
	}
	self, err := os.Executable()
	if err != nil {
		fmt.Fprintln(stderr, "pplaunch: find this executable to start the ranks:", err)
		return 1
	}
	return runAgent(f, launch.Program{Path: self, Args: argv, Env: os.Environ(), Stdout: stdout, Stderr: stderr}, stderr)
}

// runRank runs job as the rank getenv describes. Under the agent it
// publishes its progress (launch.EnvProgress): each action of the stage loop
// and, when it fails, whose failure it is, so the agent's summary names the
// rank that failed first and what a silent rank was doing.
func runRank(f launch.Flags, getenv func(string) string, stderr io.Writer, job func(ctx context.Context, r *ranks.Rank) error) int {
	var got atomic.Value // the signal that stopped this rank
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(sigs)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case s := <-sigs:
			got.Store(s)
			cancel()
		case <-ctx.Done():
		}
	}()
	prog, err := ranks.OpenProgress(getenv(launch.EnvProgress))
	if err != nil {
		fmt.Fprintln(stderr, "pplaunch:", err) // the summary will know less; the job runs
	}
	id, err := ranks.IdentityFromEnv(getenv)
	if err != nil {
		fmt.Fprintln(stderr, "pplaunch:", err)
		prog.Failed(err, contract.FailError, -1)
		return 2
	}
	prog.Phase("connecting to the store")
	r, err := ranks.Connect(ctx, id, f.RdzvTimeout.D())
	if err != nil {
		fmt.Fprintln(stderr, "pplaunch:", err)
		class := contract.FailError
		if _, stopped := got.Load().(syscall.Signal); stopped {
			class = contract.FailStopped
		}
		prog.Failed(err, class, -1)
		return 1
	}
	err = job(ranks.WithProgress(ctx, prog), r)
	cctx, ccancel := context.WithTimeout(context.WithoutCancel(ctx), f.RdzvTimeout.D())
	if err != nil {
		// Before telling the others (Fail): the agent must find this rank's
		// own account no later than theirs.
		class, peer := ranks.Classify(err)
		if _, stopped := got.Load().(syscall.Signal); stopped {
			class = contract.FailStopped
		}
		prog.Failed(err, class, peer)
		r.Fail(cctx, err)
		r.Close(cctx)
	} else {
		prog.Phase("closing: at the last barrier")
		if err = r.Close(cctx); err != nil {
			// Another rank's failure (or a rank that vanished) ended the barrier.
			prog.Failed(err, relayedOrStopped(&got), -1)
		}
	}
	ccancel()
	cancel()
	if s, ok := got.Load().(syscall.Signal); ok {
		fmt.Fprintf(stderr, "pplaunch: rank %d: stopped by %s\n", id.Rank, contract.SignalName(s))
		return 128 + int(s)
	}
	if err != nil {
		fmt.Fprintf(stderr, "pplaunch: rank %d: %v\n", id.Rank, err)
		return 1
	}
	return 0
}

// relayedOrStopped is the class of a failure that is not the job's own:
// stopped by a signal, else relayed from another rank.
func relayedOrStopped(got *atomic.Value) string {
	if _, ok := got.Load().(syscall.Signal); ok {
		return contract.FailStopped
	}
	return contract.FailRelayed
}

// runProgram is `pplaunch [flags] -- PROGRAM ARGS...`.
func runProgram(f launch.Flags, program []string, stdout, stderr io.Writer) int {
	if f.Direct {
		env, err := launch.DirectEnv(f, os.Getenv)
		if err != nil {
			fmt.Fprintln(stderr, "pplaunch:", err)
			return 2
		}
		path, err := exec.LookPath(program[0])
		if err != nil {
			fmt.Fprintln(stderr, "pplaunch:", err)
			return 127
		}
		merged := os.Environ()
		for k, v := range env {
			merged = append(merged, k+"="+v)
		}
		err = syscall.Exec(path, program, dedupEnv(merged))
		fmt.Fprintf(stderr, "pplaunch: exec %s: %v\n", path, err)
		return 126
	}
	if os.Getenv(contract.EnvRole) == contract.RoleRank {
		fmt.Fprintf(stderr, "pplaunch: this process is already rank %s of run %s (%s=%s); a rank does not start another agent\n",
			os.Getenv(contract.EnvRank), os.Getenv(contract.EnvRunID), contract.EnvRole, contract.RoleRank)
		return 2
	}
	return runAgent(f, launch.Program{Path: program[0], Args: program[1:], Env: os.Environ(), Stdout: stdout, Stderr: stderr}, stderr)
}

// runAgent resolves the flags and runs the agent until the job ends.
func runAgent(f launch.Flags, p launch.Program, stderr io.Writer) int {
	c, err := launch.Resolve(f, os.Getenv)
	if err != nil {
		fmt.Fprintln(stderr, "pplaunch:", err)
		return 2
	}
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, launch.Forwarded...)
	defer signal.Stop(sigs)
	return launch.Run(context.Background(), c, p, sigs)
}

// dedupEnv keeps the last value of each variable.
func dedupEnv(env []string) []string {
	last := map[string]int{}
	for i, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		last[k] = i
	}
	out := env[:0:0]
	for i, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		if last[k] == i {
			out = append(out, kv)
		}
	}
	return out
}
