package slurmtest

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pplaunch/pplaunch/launch/netns"
)

// Packages are the Debian packages Start installs when a program is missing.
var Packages = []string{"slurmctld", "slurmd", "slurm-client", "munge"}

// programs are what the cluster runs; any missing one triggers the install.
var programs = []string{"munged", "munge", "slurmctld", "slurmd", "sbatch", "srun", "squeue", "scontrol", "sinfo", "scancel"}

// Options shapes the cluster.
type Options struct {
	Nodes []string // node names, also the hosts' names; default n1, n2
	CPUs  int      // CPUs each node declares (more than the machine has is fine); default 8
	GPUs  int      // fake GPUs each node declares (gres gpu; character devices like /dev/null); default none
}

// Cluster is a running Slurm cluster whose nodes are netns hosts.
type Cluster struct {
	Dir   string        // slurm.conf, state, spool directories, logs, job output
	Conf  string        // path of slurm.conf
	Net   *netns.Net    // the simulated hosts; Nodes[i] is Net.Hosts[i]
	Nodes []*netns.Host // in the order of Options.Nodes; one partition, the default, holds them all

	t       testing.TB
	daemons []*daemon
}

// daemon is one foreground daemon process the cluster started and reaps.
type daemon struct {
	name string
	cmd  *exec.Cmd
	out  string // its stdout and stderr
	log  string // its own log file
	done chan struct{}
	err  error // set before done closes
}

// Start installs Slurm if needed and starts a cluster for the test, torn down
// in t.Cleanup (jobs cancelled, daemons stopped, namespaces and /etc/hosts lines
// removed) whether the test passes or not. It skips the test, saying why, when
// not run as root or where namespaces cannot be made.
func Start(t testing.TB, opts Options) *Cluster {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("slurmtest: a real Slurm cluster needs root (to install Slurm and create namespaces); CI runs the tests as root")
	}
	if err := netns.Available(); err != nil {
		t.Skip("slurmtest: " + err.Error())
	}
	if len(opts.Nodes) == 0 {
		opts.Nodes = []string{"n1", "n2"}
	}
	if opts.CPUs == 0 {
		opts.CPUs = 8
	}
	start := time.Now()
	installed, err := ensureInstalled(5 * time.Minute)
	if errors.Is(err, errNoInstaller) {
		t.Skip("slurmtest: " + err.Error())
	}
	if err != nil {
		t.Fatalf("slurmtest: %v", err)
	}
	if installed {
		t.Logf("slurmtest: installed %s with apt-get in %v", strings.Join(Packages, " "), time.Since(start).Round(time.Millisecond))
	}

	dir, err := os.MkdirTemp("", "pplaunch-slurm-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	// munged runs as the munge user and must reach its socket under dir.
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	c := &Cluster{Dir: dir, Conf: filepath.Join(dir, "slurm.conf"), t: t}
	// From here on, every wait polls a state and a minute is ample (it takes
	// under a second here).
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c.Net = netns.New(t, opts.Nodes...)
	c.Nodes = c.Net.Hosts
	t.Cleanup(func() {
		if t.Failed() {
			t.Log(c.Logs())
		}
	})

	sock, err := c.startMunge(ctx)
	if err != nil {
		t.Fatalf("slurmtest: munge: %v", err)
	}
	if err := c.writeConf(sock, opts); err != nil {
		t.Fatalf("slurmtest: %v", err)
	}
	if err := c.start("slurmctld", exec.Command("slurmctld", "-D", "-f", c.Conf), filepath.Join(dir, "slurmctld.log")); err != nil {
		t.Fatalf("slurmtest: %v", err)
	}
	if err := c.poll(ctx, "slurmctld to answer", func() (bool, string, error) {
		out, _ := c.Command(ctx, "scontrol", "ping").CombinedOutput()
		return bytes.Contains(out, []byte("is UP")), string(out), nil
	}); err != nil {
		t.Fatalf("slurmtest: %v", err)
	}
	for _, h := range c.Nodes {
		cmd := h.Command(context.Background(), "slurmd", "-D", "-N", h.Name, "-f", c.Conf)
		if err := c.start("slurmd "+h.Name, cmd, filepath.Join(dir, "slurmd."+h.Name+".log")); err != nil {
			t.Fatalf("slurmtest: %v", err)
		}
	}
	// Registered last, so it runs first: no job may outlive the daemons.
	t.Cleanup(func() { c.cancelJobs() })
	if err := c.WaitIdle(ctx); err != nil {
		t.Fatalf("slurmtest: %v", err)
	}
	t.Logf("slurmtest: cluster up in %v: slurmctld at %s, nodes %s, conf %s",
		time.Since(start).Round(time.Millisecond), c.Net.Gateway, c.nodeAddrs(), c.Conf)
	return c
}

func (c *Cluster) nodeAddrs() string {
	var s []string
	for _, h := range c.Nodes {
		s = append(s, h.Name+"="+h.Addr.String())
	}
	return strings.Join(s, " ")
}

// errNoInstaller: Slurm is missing and this is not a Debian machine.
var errNoInstaller = errors.New("no apt-get to install Slurm with")

// ensureInstalled installs Packages with apt-get, within limit, when a program
// is missing, and reports whether it did.
func ensureInstalled(limit time.Duration) (bool, error) {
	var missing []string
	for _, p := range programs {
		if _, err := exec.LookPath(p); err != nil {
			missing = append(missing, p)
		}
	}
	if len(missing) == 0 {
		return false, nil
	}
	if _, err := exec.LookPath("apt-get"); err != nil {
		return false, fmt.Errorf("%s missing: %w (install Debian's %s)", strings.Join(missing, ", "), errNoInstaller, strings.Join(Packages, " "))
	}
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	env := append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
	for _, args := range [][]string{
		{"update", "-qq"},
		append([]string{"install", "-y", "-qq", "--no-install-recommends", "-o", "DPkg::Lock::Timeout=120"}, Packages...),
	} {
		cmd := exec.CommandContext(ctx, "apt-get", args...)
		cmd.Env = env
		if out, err := cmd.CombinedOutput(); err != nil {
			return false, fmt.Errorf("%s missing; apt-get %s: %v: %s", strings.Join(missing, ", "), strings.Join(args, " "), err, tail(out, 20))
		}
	}
	for _, p := range programs {
		if _, err := exec.LookPath(p); err != nil {
			return true, fmt.Errorf("after installing %s: %v", strings.Join(Packages, " "), err)
		}
	}
	return true, nil
}

// startMunge runs a private munged (own key, own socket) as the munge user, so
// the test neither needs nor disturbs a munged the machine may run.
func (c *Cluster) startMunge(ctx context.Context) (string, error) {
	u, err := user.Lookup("munge")
	if err != nil {
		return "", fmt.Errorf("user munge (created by the munge package): %v", err)
	}
	uid, err1 := strconv.Atoi(u.Uid)
	gid, err2 := strconv.Atoi(u.Gid)
	if err := errors.Join(err1, err2); err != nil {
		return "", fmt.Errorf("user munge: %v", err)
	}
	mdir := filepath.Join(c.Dir, "munge")
	key := filepath.Join(mdir, "munge.key")
	sock := filepath.Join(mdir, "munge.socket")
	if err := os.Mkdir(mdir, 0o755); err != nil {
		return "", err
	}
	secret := make([]byte, 1024)
	rand.Read(secret)
	if err := os.WriteFile(key, secret, 0o600); err != nil {
		return "", err
	}
	for _, p := range []string{mdir, key} {
		if err := os.Chown(p, uid, gid); err != nil {
			return "", err
		}
	}
	cmd := exec.Command("munged", "-F", "--socket="+sock, "--key-file="+key,
		"--pid-file="+filepath.Join(mdir, "munged.pid"), "--log-file="+filepath.Join(mdir, "munged.log"),
		"--seed-file="+filepath.Join(mdir, "munged.seed"))
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}}
	if err := c.start("munged", cmd, filepath.Join(mdir, "munged.log")); err != nil {
		return "", err
	}
	return sock, c.poll(ctx, "munged to answer on "+sock, func() (bool, string, error) {
		out, err := exec.CommandContext(ctx, "munge", "-n", "--socket="+sock).CombinedOutput()
		return err == nil, string(out), nil
	})
}

// start runs a foreground daemon, reaps it when it exits, and registers its
// stop (SIGTERM, then SIGKILL after 10 s) with the test's cleanups.
func (c *Cluster) start(name string, cmd *exec.Cmd, log string) error {
	d := &daemon{name: name, cmd: cmd, log: log, out: filepath.Join(c.Dir, strings.ReplaceAll(name, " ", ".")+".out"), done: make(chan struct{})}
	f, err := os.Create(d.out)
	if err != nil {
		return err
	}
	cmd.Stdout, cmd.Stderr = f, f
	// Should the test binary be killed before its cleanups run, the daemons go too.
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	if cmd.Env == nil {
		cmd.Env = c.env()
	}
	if err := cmd.Start(); err != nil {
		f.Close()
		return fmt.Errorf("start %s: %v", name, err)
	}
	go func() {
		d.err = cmd.Wait()
		f.Close()
		close(d.done)
	}()
	c.daemons = append(c.daemons, d)
	c.t.Cleanup(func() {
		// Logged, not failed: how fast a Slurm daemon shuts down on a loaded
		// machine is not what a test of pplaunch checks.
		if err := d.stop(); err != nil {
			c.t.Logf("slurmtest: %v", err)
		}
	})
	return nil
}

func (d *daemon) stop() error {
	select {
	case <-d.done:
		return nil // already gone; its exit was reported where it mattered
	default:
	}
	d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-d.done:
		return nil
	case <-time.After(10 * time.Second):
	}
	d.cmd.Process.Kill()
	<-d.done
	return fmt.Errorf("%s (pid %d) ignored SIGTERM for 10s; killed", d.name, d.cmd.Process.Pid)
}

// dead returns an error naming the first daemon that has exited.
func (c *Cluster) dead() error {
	for _, d := range c.daemons {
		select {
		case <-d.done:
			return fmt.Errorf("%s exited: %v\n%s", d.name, d.err, c.logTail(d))
		default:
		}
	}
	return nil
}

// poll calls check every 100 ms until it says done, ctx ends or a daemon dies.
// check returns what it saw, for the error message.
func (c *Cluster) poll(ctx context.Context, what string, check func() (bool, string, error)) error {
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		ok, saw, err := check()
		if err != nil || ok {
			return err
		}
		if err := c.dead(); err != nil {
			return fmt.Errorf("waiting for %s: %w", what, err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w; last seen: %s", what, ctx.Err(), strings.TrimSpace(saw))
		case <-tick.C:
		}
	}
}

// CleanEnv is the test's environment without the variables that would place a
// process in some other job: Slurm's, Open MPI's and PMI's (should the tests run
// inside an allocation), pplaunch's and the torchrun contract (should they run
// under a launcher). pplaunch reads these, so jobs and agents the tests start
// get only what the test gives them.
func CleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch {
		case strings.HasPrefix(k, "SLURM_"), strings.HasPrefix(k, "OMPI_"), strings.HasPrefix(k, "PMI_"),
			strings.HasPrefix(k, "PPLAUNCH_"), strings.HasPrefix(k, "TORCHELASTIC_"):
		case k == "RANK", k == "LOCAL_RANK", k == "WORLD_SIZE", k == "LOCAL_WORLD_SIZE", k == "GROUP_RANK",
			k == "NODE_RANK", k == "MASTER_ADDR", k == "MASTER_PORT", k == "MPI_LOCALRANKID", k == "MPI_LOCALNRANKS":
		default:
			env = append(env, kv)
		}
	}
	return env
}

// env is the environment for Slurm commands (and, through sbatch, for jobs).
func (c *Cluster) env() []string {
	return append(CleanEnv(), "SLURM_CONF="+c.Conf)
}

// Command prepares a Slurm client command (sinfo, srun, ...) against this cluster.
func (c *Cluster) Command(ctx context.Context, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = c.env()
	cmd.Dir = c.Dir
	return cmd
}

// WaitIdle waits until every node is idle. A job submitted while a node is
// still completing the last one waits for Slurm's next scheduling pass
// (seconds); after WaitIdle it starts at once.
func (c *Cluster) WaitIdle(ctx context.Context) error {
	return c.poll(ctx, "nodes to be idle", func() (bool, string, error) {
		out, err := c.Command(ctx, "sinfo", "-h", "-N", "-o", "%N|%T").CombinedOutput()
		if err != nil {
			return false, string(out), nil // slurmctld still starting
		}
		states, err := ParseNodeStates(string(out))
		if err != nil {
			return false, "", err
		}
		for _, h := range c.Nodes {
			if states[h.Name] != "idle" {
				return false, string(out), nil
			}
		}
		return true, "", nil
	})
}

// Job is a batch job to submit.
type Job struct {
	Script string   // path of the sbatch script
	Args   []string // the script's arguments
	Env    []string // KEY=VALUE added to the environment sbatch passes to the job
	Sbatch []string // extra sbatch options (before the script)
}

// Result is how a job ended.
type Result struct {
	ID       int
	State    string // COMPLETED, FAILED, ...
	ExitCode string // as Slurm prints it, "code:signal"
	Nodes    string // the job's node list
	Output   string // the job's stdout and stderr
}

// Run submits j, waits for it to end, and returns how it ended. It is an error
// if the job did not complete with exit code 0; the error holds its output.
// ctx bounds the wait: when it ends first, the job is cancelled. Jobs get a
// two-minute time limit unless j.Sbatch gives --time.
func (c *Cluster) Run(ctx context.Context, j Job) (Result, error) {
	out := filepath.Join(c.Dir, "job-%j.out")
	args := append([]string{"--parsable", "--time=2", "--output=" + out, "--chdir=" + c.Dir}, j.Sbatch...)
	args = append(append(args, j.Script), j.Args...)
	cmd := c.Command(ctx, "sbatch", args...)
	cmd.Env = append(cmd.Env, j.Env...)
	b, err := cmd.CombinedOutput()
	if err != nil {
		return Result{}, fmt.Errorf("sbatch %s: %v: %s", strings.Join(args, " "), err, bytes.TrimSpace(b))
	}
	idText, _, _ := strings.Cut(strings.TrimSpace(string(b)), ";") // --parsable: id[;cluster]
	id, err := strconv.Atoi(idText)
	if err != nil {
		return Result{}, fmt.Errorf("sbatch printed %q, want a job id", b)
	}
	r := Result{ID: id}
	var rec map[string]string
	err = c.poll(ctx, fmt.Sprintf("job %d to end", id), func() (bool, string, error) {
		o, err := c.Command(ctx, "scontrol", "-o", "show", "job", idText).CombinedOutput()
		if err != nil {
			return false, string(o), nil
		}
		rec = ParseOneLiner(string(o))
		return JobEnded(rec["JobState"]), string(o), nil
	})
	if err != nil {
		c.Command(context.Background(), "scancel", idText).Run()
	}
	r.State, r.ExitCode, r.Nodes = rec["JobState"], rec["ExitCode"], rec["NodeList"]
	o, _ := os.ReadFile(strings.ReplaceAll(out, "%j", idText))
	r.Output = string(o)
	if err == nil && (r.State != "COMPLETED" || r.ExitCode != "0:0") {
		err = fmt.Errorf("job %d (%s): %s, exit code %s, reason %s", id, j.Script, r.State, r.ExitCode, rec["Reason"])
	}
	if err != nil {
		return r, fmt.Errorf("%w\njob output:\n%s", err, tail([]byte(r.Output), 40))
	}
	return r, nil
}

// cancelJobs cancels whatever the test left running and waits (bounded) for
// the queue to empty, so no job step outlives the daemons.
func (c *Cluster) cancelJobs() {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if err := c.dead(); err != nil {
		return // without every daemon there is no orderly cancel; the namespaces' teardown kills what is left
	}
	c.Command(ctx, "scancel", "--user="+strconv.Itoa(os.Getuid())).Run()
	err := c.poll(ctx, "the queue to empty", func() (bool, string, error) {
		out, err := c.Command(ctx, "squeue", "-h", "-o", "%i %T").CombinedOutput()
		return err == nil && len(bytes.TrimSpace(out)) == 0, string(out), nil
	})
	if err != nil {
		c.t.Logf("slurmtest: teardown: %v", err)
	}
}

// Logs returns the tail of every daemon's output and log, for a failure report.
func (c *Cluster) Logs() string {
	var b strings.Builder
	for _, d := range c.daemons {
		b.WriteString(c.logTail(d))
	}
	return b.String()
}

func (c *Cluster) logTail(d *daemon) string {
	// The daemons write the same lines to their log file and, in the
	// foreground, to stderr; the log file if there is one, else the output.
	for _, p := range []string{d.log, d.out} {
		if data, err := os.ReadFile(p); err == nil && len(data) > 0 {
			return fmt.Sprintf("--- %s: %s\n%s\n", d.name, p, tail(data, 15))
		}
	}
	return ""
}

// tail returns the last n lines of b.
func tail(b []byte, n int) string {
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
