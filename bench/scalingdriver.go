package bench

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"time"

	"github.com/pplaunch/pplaunch/launch/netns"
	"github.com/pplaunch/pplaunch/plan"
	"github.com/pplaunch/pplaunch/ranks"
)

// rdzvPort is the store's port on a simulated host: each host has a port
// space of its own.
const rdzvPort = "29400"

// ScalingDriver runs the sizes of a scaling benchmark as real jobs: at each
// size, one agent per node (this executable, `--nproc N train` with the
// size's flags) on this machine, on simulated hosts or in one srun step of
// the Slurm allocation, then reads the metrics and profile the job left
// into the size's row.
type ScalingDriver struct {
	Target ScalingTarget
	Sizes  []ScalingSize
	Mode   ScalingMode
	Grow   string
	Train  []string // the user's train flags, for the report
	// Args are the train flags of one size, writing its metrics and
	// profile to the files named.
	Args      func(z ScalingSize, metrics, profile string) []string
	Schedule  string // the train flags' schedule, v and recomputation, for the predictions
	Virtual   int
	Recompute bool
	Warmup    int // steps left out at each size
	Measured  int // steps measured at each size
	Timeout   time.Duration
	LinkRate  string        // --link-rate as given, for the report
	Rate      uint64        // bits per second of each simulated link; 0: as fast as it goes
	LinkDelay time.Duration // added to each simulated host's outgoing packets
}

// Run runs every size in turn, each one's logs, metrics and profile in a
// directory of its own under dir, and reports the rows of those that ran.
func (d ScalingDriver) Run(ctx context.Context, dir string, stderr io.Writer) (ScalingReport, error) {
	rep := ScalingReport{Mode: d.Mode, Grow: d.Grow, Hosts: d.Target.String(), Title: d.Target.Short(), Train: d.Train}
	var hosts []*netns.Host
	if d.Target.Kind == TargetNetns {
		net, err := d.network(ctx)
		if err != nil {
			return rep, err
		}
		defer net.Close()
		hosts = net.Hosts
		if d.Rate > 0 {
			rep.Hosts += ", links limited to " + d.LinkRate
			rep.Title += ", " + d.LinkRate + " links"
		}
		if d.LinkDelay > 0 {
			rep.Hosts += ", delayed " + d.LinkDelay.String()
			rep.Title += ", +" + d.LinkDelay.String()
		}
	}
	for i, z := range d.Sizes {
		fmt.Fprintf(stderr, "bench scaling: size %d/%d: %s = world %d (pp %d × dp %d, %d micro-batches of %d)\n",
			i+1, len(d.Sizes), z.Where(), z.World, z.PP, z.DP, z.Micro, z.MicroSize)
		sub := filepath.Join(dir, fmt.Sprintf("world%d-%dx%d", z.World, z.Nodes, z.NProc))
		if err := os.MkdirAll(sub, 0o755); err != nil {
			return rep, err
		}
		metrics, profile := filepath.Join(sub, "metrics.jsonl"), filepath.Join(sub, "profile.json")
		t0 := time.Now()
		if err := d.runSize(ctx, hosts, z, d.Args(z, metrics, profile), sub); err != nil {
			return rep, fmt.Errorf("world %d (%s): %w", z.World, z.Where(), err)
		}
		recs, prof, err := readRun(metrics, profile)
		if err != nil {
			return rep, fmt.Errorf("world %d: %w", z.World, err)
		}
		row, err := ScalingRun{Size: z, Schedule: d.Schedule, Virtual: d.Virtual, Recompute: d.Recompute,
			Records: recs, Profile: prof, Warmup: d.Warmup, Measured: d.Measured}.Row()
		if err != nil {
			return rep, err
		}
		fmt.Fprintf(stderr, "bench scaling: world %d: %.0f tokens/s, %.3g s a step (%.1f s in all)\n", z.World, row.TokensPerS, row.StepS, time.Since(t0).Seconds())
		if cpus := runtime.NumCPU(); d.Target.Kind != TargetSlurm && z.World > cpus {
			fmt.Fprintf(stderr, "bench scaling: note: world %d shares this machine's %d CPUs, so each rank computes slower than alone: the curve shows this machine, not a cluster\n", z.World, cpus)
		}
		rep.Rows = append(rep.Rows, row)
		SetEfficiency(rep.Rows)
	}
	return rep, nil
}

// network builds the simulated hosts and shapes their links (CanRun has
// checked that it can).
func (d ScalingDriver) network(ctx context.Context) (*netns.Net, error) {
	names := make([]string, d.Target.MaxNodes)
	for i := range names {
		names[i] = fmt.Sprintf("ppscale%d-%d", os.Getpid(), i)
	}
	net, err := netns.Create(ctx, names...)
	if err != nil {
		return nil, fmt.Errorf("--netns: %w", err)
	}
	if d.Rate > 0 {
		err = net.LimitRate(d.Rate)
	}
	if err == nil && d.LinkDelay > 0 {
		err = net.AddDelay(d.LinkDelay)
	}
	if err != nil {
		net.Close()
		return nil, err
	}
	return net, nil
}

// runSize runs one size's job to its end: one agent per node, each with
// its log in dir. The first agent to fail stops the others.
func (d ScalingDriver) runSize(parent context.Context, hosts []*netns.Host, z ScalingSize, args []string, dir string) error {
	ctx, cancel := context.WithTimeout(parent, d.Timeout)
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
	switch d.Target.Kind {
	case TargetLocal:
		cmds = append(cmds, exec.CommandContext(ctx, self, append([]string{"--nproc", nproc, "train"}, args...)...))
	case TargetSlurm:
		n := strconv.Itoa(z.Nodes)
		srun := []string{"--nodes", n, "--ntasks", n, "--ntasks-per-node", "1", "--kill-on-bad-exit=1"}
		// The one task per node is the agent and its ranks: it gets the
		// node's CPUs, not the default one.
		if cpus := os.Getenv("SLURM_CPUS_ON_NODE"); cpus != "" {
			srun = append(srun, "--cpus-per-task", cpus)
		}
		srun = append(srun, self, "--nproc", nproc, "train")
		cmds = append(cmds, exec.CommandContext(ctx, "srun", append(srun, args...)...))
	case TargetNetns:
		for i := range z.Nodes {
			a := []string{"--nnodes", strconv.Itoa(z.Nodes), "--node-rank", strconv.Itoa(i), "--rdzv-endpoint", hosts[0].Name + ":" + rdzvPort, "--nproc", nproc, "train"}
			cmds = append(cmds, hosts[i].Command(ctx, self, append(a, args...)...))
		}
	}
	err = runAgents(ctx, cancel, cmds, env, dir)
	if err != nil && parent.Err() != nil {
		return fmt.Errorf("interrupted: its agents were stopped (their logs are in %s)", dir)
	}
	return err
}

// readRun reads what one size's run left.
func readRun(metrics, profile string) ([]ranks.StepRecord, *plan.Profile, error) {
	recs, err := readMetrics(metrics)
	if err != nil {
		return nil, nil, err
	}
	f, err := os.Open(profile)
	if err != nil {
		return recs, nil, err
	}
	defer f.Close()
	p, err := plan.ReadProfile(f)
	return recs, p, err
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
