package launch

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"

	"github.com/pplaunch/pplaunch/contract"
)

// The agent's side of `pplaunch`: what this process is (a rank, or the
// agent of ranks to start) and the agent run to its end. The rank's side
// is ranks.Run; cmd/pplaunch chooses between them (RankEnv).

// RankEnv says whether this process is a rank and, if so, how it reads its
// identity: a rank the agent started (PPLAUNCH_ROLE=rank) reads getenv; one
// that srun or mpirun started (--direct) reads the rank contract DirectEnv
// builds, then getenv. rank is false in the agent-to-be.
func RankEnv(f Flags, getenv func(string) string) (env func(string) string, rank bool, err error) {
	if getenv(contract.EnvRole) == contract.RoleRank {
		return getenv, true, nil
	}
	if !f.Direct {
		return nil, false, nil
	}
	direct, err := DirectEnv(f, getenv)
	if err != nil {
		return nil, false, err
	}
	return func(k string) string {
		if v, ok := direct[k]; ok {
			return v
		}
		return getenv(k)
	}, true, nil
}

// RunSelf is the agent of a built-in rank job: it spawns --nproc copies of
// this same executable with the same argv and the rank environment, each of
// which finds itself a rank (RankEnv). It returns the agent's exit code.
func RunSelf(f Flags, argv []string, stdout, stderr io.Writer) int {
	self, err := os.Executable()
	if err != nil {
		fmt.Fprintln(stderr, "pplaunch: find this executable to start the ranks:", err)
		return 1
	}
	return RunAgent(f, Program{Path: self, Args: argv, Env: os.Environ(), Stdout: stdout, Stderr: stderr}, stderr)
}

// RunProgram is `pplaunch [flags] -- PROGRAM ARGS...`: the agent of ranks
// that each run program, or under --direct this process becoming the one
// rank srun or mpirun made it (exec, with the rank contract). It returns
// the exit code: the agent's (Run), 2 for bad flags or a rank that would
// start another agent, 127 when program is not found, 126 when it does not
// start.
func RunProgram(f Flags, program []string, stdout, stderr io.Writer) int {
	if f.Direct {
		env, err := DirectEnv(f, os.Getenv)
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
	return RunAgent(f, Program{Path: program[0], Args: program[1:], Env: os.Environ(), Stdout: stdout, Stderr: stderr}, stderr)
}

// RunAgent resolves the flags and runs the agent of p until the job ends,
// forwarding the signals Forwarded names to its ranks.
func RunAgent(f Flags, p Program, stderr io.Writer) int {
	c, err := Resolve(f, os.Getenv)
	if err != nil {
		fmt.Fprintln(stderr, "pplaunch:", err)
		return 2
	}
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, Forwarded...)
	defer signal.Stop(sigs)
	return Run(context.Background(), c, p, sigs)
}

// dedupEnv keeps the last value of each variable, where it was.
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
