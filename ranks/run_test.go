package ranks

import (
	"bytes"
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/pplaunch/pplaunch/contract"
)

// oneRankEnv is the environment of a world of one rank that serves its own
// store, with its progress file at progress.
func oneRankEnv(t *testing.T, progress string) map[string]string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return map[string]string{contract.EnvRank: "0", contract.EnvWorldSize: "1", contract.EnvLocalRank: "0", contract.EnvLocalWorldSize: "1",
		contract.EnvStoreAddr: addr, contract.EnvHostStore: "1", contract.EnvToken: "run-test", contract.EnvProgress: progress}
}

// Run's exit codes, its last word on stderr and the failure class it
// leaves in the progress file for the agent's summary.
func TestRun(t *testing.T) {
	stop := func(ctx context.Context, r *Rank) error {
		if err := syscall.Kill(syscall.Getpid(), syscall.SIGTERM); err != nil {
			return err
		}
		<-ctx.Done() // the watcher cancels the job
		return ctx.Err()
	}
	cases := []struct {
		name   string
		env    func(env map[string]string)
		job    func(ctx context.Context, r *Rank) error
		code   int
		stderr string
		class  string // the failure in the progress file ("": none)
	}{
		{name: "success", job: func(context.Context, *Rank) error { return nil }, code: 0},
		{name: "the job fails", job: func(context.Context, *Rank) error { return errors.New("disk full") },
			code: 1, stderr: "pplaunch: rank 0: disk full\n", class: contract.FailError},
		{name: "a signal stops it", job: stop, code: 128 + int(syscall.SIGTERM),
			stderr: "pplaunch: rank 0: stopped by SIGTERM\n", class: contract.FailStopped},
		{name: "no rank", env: func(env map[string]string) { delete(env, contract.EnvRank) }, code: 2,
			stderr: "pplaunch: rank identity: RANK is not set (not started by pplaunch, or srun/mpirun without --direct?)\n", class: contract.FailError},
		{name: "no token", env: func(env map[string]string) { delete(env, contract.EnvToken) }, code: 1,
			stderr: "pplaunch: rank 0 of 1 (local rank 0 of 1 on node 0): PPLAUNCH_TOKEN is not set; the store refuses connections without the job's token\n", class: contract.FailError},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			progress := filepath.Join(t.TempDir(), "progress")
			if err := os.WriteFile(progress, make([]byte, contract.ProgressSize), 0o600); err != nil {
				t.Fatal(err)
			}
			env := oneRankEnv(t, progress)
			if c.env != nil {
				c.env(env)
			}
			job := c.job
			if job == nil {
				job = func(context.Context, *Rank) error { t.Error("the job ran"); return nil }
			}
			var stderr bytes.Buffer
			code := Run(10*time.Second, func(k string) string { return env[k] }, &stderr, job)
			if code != c.code || stderr.String() != c.stderr {
				t.Errorf("exit %d, stderr %q; want %d, %q", code, stderr.String(), c.code, c.stderr)
			}
			f, err := os.Open(progress)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			_, _, fail, failed := contract.ReadProgress(f)
			if failed != (c.class != "") || fail.Class != c.class {
				t.Errorf("progress: failed %v, class %q; want %q", failed, fail.Class, c.class)
			}
		})
	}
}
