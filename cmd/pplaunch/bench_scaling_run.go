package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/pplaunch/pplaunch/bench"
	"github.com/pplaunch/pplaunch/launch/netns"
	"github.com/pplaunch/pplaunch/ranks"
)

// rdzvPort is the store's port on a simulated host: each host has a port
// space of its own.
const rdzvPort = "29400"

// linkRate parses --link-rate (0: not limited).
func (c *benchScalingCmd) linkRate() (uint64, error) {
	if c.LinkRate == "" {
		return 0, nil
	}
	r, err := netns.ParseRate(c.LinkRate)
	if err != nil {
		return 0, fmt.Errorf("--link-rate: %w", err)
	}
	return r, nil
}

// runSizes runs every size in turn and reports the rows of those that ran.
func (c *benchScalingCmd) runSizes(ctx context.Context, s *scalingSetup, dir string, stderr io.Writer) (bench.ScalingReport, error) {
	rep := bench.ScalingReport{Mode: bench.ScalingMode(c.Mode), Grow: c.Grow, Hosts: s.target.String(), Title: s.target.short(), Train: c.train}
	var hosts []*netns.Host
	if s.target.kind == targetNetns {
		net, err := c.network(ctx, s)
		if err != nil {
			return rep, err
		}
		defer net.Close()
		hosts = net.Hosts
		if s.rate > 0 {
			rep.Hosts += ", links limited to " + c.LinkRate
			rep.Title += ", " + c.LinkRate + " links"
		}
		if c.LinkDelay.D() > 0 {
			rep.Hosts += ", delayed " + c.LinkDelay.D().String()
			rep.Title += ", +" + c.LinkDelay.D().String()
		}
	}
	for i, z := range s.sizes {
		fmt.Fprintf(stderr, "bench scaling: size %d/%d: %s = world %d (pp %d × dp %d, %d micro-batches of %d)\n",
			i+1, len(s.sizes), z.Where(), z.World, z.PP, z.DP, z.Micro, z.MicroSize)
		sub := filepath.Join(dir, fmt.Sprintf("world%d-%dx%d", z.World, z.Nodes, z.NProc))
		if err := os.MkdirAll(sub, 0o755); err != nil {
			return rep, err
		}
		metrics, profile := filepath.Join(sub, "metrics.jsonl"), filepath.Join(sub, "profile.json")
		t0 := time.Now()
		if err := c.runSize(ctx, s.target, hosts, z, c.trainArgs(z, metrics, profile), sub); err != nil {
			return rep, fmt.Errorf("world %d (%s): %w", z.World, z.Where(), err)
		}
		recs, prof, err := readRun(metrics, profile)
		if err != nil {
			return rep, fmt.Errorf("world %d: %w", z.World, err)
		}
		row, err := bench.ScalingRun{Size: z, Schedule: s.base.Schedule, Virtual: s.base.Virtual, Recompute: s.base.Recompute,
			Records: recs, Profile: prof, Warmup: c.WarmupSteps, Measured: c.Steps}.Row()
		if err != nil {
			return rep, err
		}
		fmt.Fprintf(stderr, "bench scaling: world %d: %.0f tokens/s, %.3g s a step (%.1f s in all)\n", z.World, row.TokensPerS, row.StepS, time.Since(t0).Seconds())
		if cpus := runtime.NumCPU(); s.target.kind != targetSlurm && z.World > cpus {
			fmt.Fprintf(stderr, "bench scaling: note: world %d shares this machine's %d CPUs, so each rank computes slower than alone: the curve shows this machine, not a cluster\n", z.World, cpus)
		}
		rep.Rows = append(rep.Rows, row)
		bench.SetEfficiency(rep.Rows)
	}
	return rep, nil
}

// network builds the simulated hosts and shapes their links (canRun has
// checked that it can).
func (c *benchScalingCmd) network(ctx context.Context, s *scalingSetup) (*netns.Net, error) {
	names := make([]string, s.target.maxNodes)
	for i := range names {
		names[i] = fmt.Sprintf("ppscale%d-%d", os.Getpid(), i)
	}
	net, err := netns.Create(ctx, names...)
	if err != nil {
		return nil, fmt.Errorf("--netns: %w", err)
	}
	if s.rate > 0 {
		err = net.LimitRate(s.rate)
	}
	if err == nil && c.LinkDelay.D() > 0 {
		err = net.AddDelay(c.LinkDelay.D())
	}
	if err != nil {
		net.Close()
		return nil, err
	}
	return net, nil
}

// runSize runs one size's job to its end: one agent per node, each with
// its log in dir. The first agent to fail stops the others.
func (c *benchScalingCmd) runSize(parent context.Context, t scalingTarget, hosts []*netns.Host, z bench.ScalingSize, args []string, dir string) error {
	ctx, cancel := context.WithTimeout(parent, c.Timeout.D())
	defer cancel()
	self, err := os.Executable()
	if err != nil {
		return err
	}
	token, err := newToken()
	if err != nil {
		return err
	}
	env := append(cleanLauncherEnv(os.Environ()), "PPLAUNCH_TOKEN="+token)
	nproc := strconv.Itoa(z.NProc)
	var cmds []*exec.Cmd
	switch t.kind {
	case targetLocal:
		cmds = append(cmds, exec.CommandContext(ctx, self, append([]string{"--nproc", nproc, "train"}, args...)...))
	case targetSlurm:
		n := strconv.Itoa(z.Nodes)
		srun := []string{"--nodes", n, "--ntasks", n, "--ntasks-per-node", "1", "--kill-on-bad-exit=1"}
		// The one task per node is the agent and its ranks: it gets the
		// node's CPUs, not the default one.
		if cpus := os.Getenv("SLURM_CPUS_ON_NODE"); cpus != "" {
			srun = append(srun, "--cpus-per-task", cpus)
		}
		srun = append(srun, self, "--nproc", nproc, "train")
		cmds = append(cmds, exec.CommandContext(ctx, "srun", append(srun, args...)...))
	case targetNetns:
		for i := range z.Nodes {
			a := []string{"--nnodes", strconv.Itoa(z.Nodes), "--node-rank", strconv.Itoa(i), "--rdzv-endpoint", hosts[0].Name + ":" + rdzvPort, "--nproc", nproc, "train"}
			cmds = append(cmds, hosts[i].Command(ctx, self, append(a, args...)...))
		}
	}
	err = runAll(ctx, cancel, cmds, env, dir)
	if err != nil && parent.Err() != nil {
		return fmt.Errorf("interrupted: its agents were stopped (their logs are in %s)", dir)
	}
	return err
}

// runAll starts cmds with their output in dir/node<i>.log, waits for all,
// and stops the rest (SIGTERM, then SIGKILL after 10 s) when one fails.
func runAll(ctx context.Context, cancel context.CancelFunc, cmds []*exec.Cmd, env []string, dir string) error {
	errs := make(chan error, len(cmds))
	logs := make([]string, len(cmds))
	for i, cmd := range cmds {
		logs[i] = filepath.Join(dir, fmt.Sprintf("node%d.log", i))
		f, err := os.Create(logs[i])
		if err != nil {
			cancel()
			return err
		}
		defer f.Close()
		cmd.Env, cmd.Stdout, cmd.Stderr = env, f, f
		cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
		// Should bench scaling die, the agent stops its ranks and ends.
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
		cmd.WaitDelay = 10 * time.Second
		if err := cmd.Start(); err != nil {
			cancel()
			return fmt.Errorf("start %s: %w", cmd.Path, err)
		}
		go func(i int) {
			err := cmd.Wait()
			if err != nil {
				err = fmt.Errorf("node %d: %w; its log %s ends:\n%s", i, err, logs[i], tail(logs[i], 12))
				cancel()
			}
			errs <- err
		}(i)
	}
	var all []error
	for range cmds {
		if err := <-errs; err != nil {
			all = append(all, err)
		}
	}
	if len(all) == 0 {
		return nil
	}
	if ctx.Err() == context.DeadlineExceeded {
		all = append([]error{fmt.Errorf("did not finish within --timeout")}, all...)
	}
	return errors.Join(all...)
}

// cleanLauncherEnv drops the launcher's own settings from env, which would
// override the flags each size's agents are given.
func cleanLauncherEnv(env []string) []string {
	var out []string
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "PPLAUNCH_NNODES", "PPLAUNCH_NODE_RANK", "PPLAUNCH_RDZV_ENDPOINT", "PPLAUNCH_NPROC", "PPLAUNCH_DIRECT", "PPLAUNCH_TOKEN":
			continue
		}
		out = append(out, kv)
	}
	return out
}

// newToken is a fresh secret for one size's agents.
func newToken() (string, error) {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return hex.EncodeToString(b), nil
}

// tail is the last n lines of the file at path.
func tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// readMetrics reads the step records of train --metrics.
func readMetrics(path string) ([]ranks.StepRecord, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	recs, err := ranks.ReadStepRecords(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return recs, nil
}
