package main

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/pplaunch/pplaunch/launch"
	"github.com/pplaunch/pplaunch/ranks"
)

// How built-in rank jobs run (the contract for `train`, `bench p2p`, `bench
// allreduce`, `bench store`, ...): such a subcommand calls runAsRanks with its
// job. In a process that is not yet a rank, runAsRanks is the agent: it spawns
// --nproc copies of this same executable with the same argv and the rank
// environment (PPLAUNCH_ROLE=rank among it; launch.RunSelf). In such a copy,
// or under --direct (srun/mpirun made this process a rank), runAsRanks reads
// the identity, connects to the job's store and runs the job (ranks.Run).
// Launcher flags are parsed in both and ignored in a rank, except
// --rdzv-timeout (how long a rank waits for the store).
//
// runAsRanks returns the process exit code: the agent's (see launch.Run), or in
// a rank 0 on success, 1 when the job fails, 128+signal when a signal ended it.
func runAsRanks(f launch.Flags, argv []string, stdout, stderr io.Writer, job func(ctx context.Context, r *ranks.Rank) error) int {
	getenv, rank, err := launch.RankEnv(f, os.Getenv)
	switch {
	case err != nil:
		fmt.Fprintln(stderr, "pplaunch:", err)
		return 2
	case rank:
		return ranks.Run(f.RdzvTimeout.D(), getenv, stderr, job)
	}
	return launch.RunSelf(f, argv, stdout, stderr)
}
