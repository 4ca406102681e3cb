package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
)

// The test binary doubles as pplaunch: with PPLAUNCH_TEST_MAIN=1 it runs the
// command line instead of the tests, so the agent can spawn "this same
// executable" as its ranks, as the real binary does.
func TestMain(m *testing.M) {
	if os.Getenv("PPLAUNCH_TEST_MAIN") == "1" {
		os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

// pplaunch is a command running this binary as pplaunch with args.
func pplaunch(t *testing.T, env []string, args ...string) *exec.Cmd {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(self, args...)
	cmd.Env = append(append(os.Environ(), "PPLAUNCH_TEST_MAIN=1"), env...)
	return cmd
}

func exitCode(t *testing.T, err error) int {
	t.Helper()
	if err == nil {
		return 0
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		t.Fatal(err)
	}
	return ee.ExitCode()
}

func TestHelp(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run([]string{"--help"}, &out, &errb); code != 0 {
		t.Fatalf("--help exit %d: %s", code, errb.String())
	}
	for _, want := range []string{"--nproc", "PPLAUNCH_NPROC", "--nnodes", "--node-rank", "--rdzv-endpoint", "--master-addr",
		"MASTER_PORT", "--rdzv-id", "--standalone", "--max-restarts", "--rdzv-timeout", "--log-dir", "--tee",
		"--local-ranks-filter", "--grace-period", "--tag", "--no-tag", "--direct", "--rdzv-backend", "--rdzv-conf", "Examples:", "-- PROGRAM", "bench",
		"export\nPPLAUNCH_TOKEN=$(openssl rand -hex 16)"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("--help lacks %q:\n%s", want, out.String())
		}
	}
	// Every launcher flag names its environment fallback.
	if n := strings.Count(out.String(), "env: "); n != 19 {
		t.Errorf("--help names %d environment fallbacks, want 19:\n%s", n, out.String())
	}
}

func TestArgumentErrors(t *testing.T) {
	cases := []struct {
		args    []string
		env     []string
		wantErr string
	}{
		{[]string{"--nproc", "x", "--", "true"}, nil, `--nproc "x"`},
		{[]string{"--nproc", "-1", "--", "true"}, nil, `--nproc "-1": want a positive number or auto`},
		{[]string{"--nnodes", "-2", "--", "true"}, nil, `--nnodes -2: must be 1 or more`},
		{[]string{"bench", "store", "--", "true"}, nil, "not both"},
		{[]string{"--nproc", "2", "--"}, nil, "nothing after --"},
		{[]string{"--nproc", "2", "--", "true"}, []string{"PPLAUNCH_ROLE=rank", "RANK=1"}, "already rank 1"},
		{[]string{"--direct", "--", "true"}, []string{"SLURM_JOB_ID=", "OMPI_COMM_WORLD_RANK=", "PMI_RANK="}, "no launcher found"},
		{[]string{"--bogus"}, nil, "unknown flag --bogus (pplaunch --help lists the flags)"},
		{[]string{"--nprco", "2", "--", "true"}, nil, "unknown flag --nprco: did you mean --nproc?"},
		{[]string{"--nproc", "2", "python3", "train.py"}, nil, "put -- before it: pplaunch --nproc 2 -- python3 train.py"},
		{[]string{"trian"}, nil, "unknown command trian: did you mean train?"},
		{[]string{"bench", "stpe"}, nil, "unknown command stpe: did you mean step? (pplaunch bench --help lists them)"},
		{[]string{"bench"}, nil, "allreduce    all-reduce time"},
		{[]string{"train", "--micro-batches", "8"}, nil, "unknown flag --micro-batches: did you mean --microbatches? (pplaunch train --help lists the flags)"},
		{[]string{"train", "--lr", "abc"}, nil, "--lr abc: want a number"},
		{[]string{"train", "--steps=1.5"}, nil, "--steps 1.5: want a whole number"},
		{[]string{"--nnodes", "1:2", "train"}, nil, "--nnodes 1:2 needs --rdzv-endpoint HOST:PORT or --master-addr"},
		{[]string{"sample"}, nil, "--from CKPT is required"},
		// Usage errors exit 2 in every command.
		{[]string{"plan", "--tw", "5", "--tb", "1"}, nil, "--tw 5 is more than --tb 1"},
		{[]string{"plan", "--schedule", "nope"}, nil, "nope"},
		{[]string{"bench", "step", "--model", "nope"}, nil, "--model"},
		{[]string{"bench", "rendezvous", "--agents", "x"}, nil, "--agents"},
		{[]string{"--nproc", "2"}, nil, "nothing to run"},
		// Several nodes need a secret: refused before the agent listens.
		{[]string{"--nnodes", "2", "--node-rank", "0", "--rdzv-endpoint", "127.0.0.1:1", "--", "true"}, []string{"PPLAUNCH_TOKEN="},
			"pplaunch: --nnodes 2: a job on several nodes needs a secret token shared by its nodes, and PPLAUNCH_TOKEN is not set; generate one and export the same value on every node before pplaunch starts: export PPLAUNCH_TOKEN=$(openssl rand -hex 16)"},
	}
	for _, c := range cases {
		var out bytes.Buffer
		cmd := pplaunch(t, c.env, c.args...)
		cmd.Stdout, cmd.Stderr = &out, &out
		if code := exitCode(t, cmd.Run()); code != 2 || !strings.Contains(out.String(), c.wantErr) {
			t.Errorf("pplaunch %q: exit %d, output %q; want 2 and %q", c.args, code, out.String(), c.wantErr)
		}
	}
}

func TestTorchrunNames(t *testing.T) {
	got := torchrunNames([]string{"--nproc_per_node=4", "--nproc-per-node", "2", "--max_restarts", "1", "-x", "a_b"})
	want := []string{"--nproc=4", "--nproc", "2", "--max-restarts", "1", "-x", "a_b"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("got %q, want %q", got, want)
	}
	flags, prog, ok := splitProgram([]string{"--nproc", "2", "--", "echo", "--", "x"})
	if !ok || fmt.Sprint(flags) != "[--nproc 2]" || fmt.Sprint(prog) != "[echo -- x]" {
		t.Fatalf("splitProgram: %q %q %v", flags, prog, ok)
	}
}

func TestLauncherFlagsOnly(t *testing.T) {
	for _, c := range []struct {
		args []string
		want bool
	}{
		{nil, true},
		{[]string{"--nproc", "4", "--max-restarts", "1"}, true},
		{[]string{"--nproc", "4", "train"}, false}, // a subcommand and a program: the whole parser says so
		{[]string{"bench"}, false},
		{[]string{"--help"}, false},
		{[]string{"-h"}, false},
		{[]string{"--rdzv-id", "top"}, false}, // a value named as a subcommand: the whole way, correct too
	} {
		if got := launcherFlagsOnly(c.args); got != c.want {
			t.Errorf("launcherFlagsOnly(%q) = %v, want %v", c.args, got, c.want)
		}
	}
}

// TestBenchStoreAsRanks runs a built-in rank job end to end: the agent spawns
// this executable 3 times; each copy finds itself a rank and runs the job.
func TestBenchStoreAsRanks(t *testing.T) {
	var out, errb bytes.Buffer
	cmd := pplaunch(t, nil, "--nproc_per_node", "3", "bench", "store", "--iters", "20")
	cmd.Stdout, cmd.Stderr = &out, &errb
	if code := exitCode(t, cmd.Run()); code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out.String(), errb.String())
	}
	if !strings.Contains(out.String(), "[rank 0] store round trips: 3 ranks") {
		t.Fatalf("no table from rank 0:\n%s", out.String())
	}
	rows := regexp.MustCompile(`(?m)^\[rank 0\] +(\d) +\d+µs / \d+µs`).FindAllStringSubmatch(out.String(), -1)
	if len(rows) != 3 {
		t.Fatalf("%d rows, want 3:\n%s", len(rows), out.String())
	}
}

// TestAgentForwardsSIGTERM sends a real SIGTERM to the agent process. Each
// rank says ready once its child runs, so the signal finds both in place.
func TestAgentForwardsSIGTERM(t *testing.T) {
	cmd := pplaunch(t, nil, "--nproc", "2", "--", "/bin/sh", "-c",
		`trap 'echo "got TERM"; exit 0' TERM; sleep 1000 & echo ready; wait $!`)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var errb bytes.Buffer
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(stdout)
	var lines []string
	for ready := 0; ready < 2 && sc.Scan(); {
		lines = append(lines, sc.Text())
		if strings.HasSuffix(sc.Text(), "] ready") {
			ready++
		}
	}
	cmd.Process.Signal(syscall.SIGTERM)
	rest, _ := io.ReadAll(stdout)
	code := exitCode(t, cmd.Wait())
	all := strings.Join(lines, "\n") + "\n" + string(rest)
	if code != 143 || strings.Count(all, "got TERM") != 2 {
		t.Fatalf("exit %d (want 143); stdout:\n%s\nstderr:\n%s", code, all, errb.String())
	}
}

func freePort(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
}

// TestDirectUnderSrunEnvironment starts 3 processes with the variables srun
// gives its tasks; with --direct each is one rank, rank 0 serving the store.
func TestDirectUnderSrunEnvironment(t *testing.T) {
	port := freePort(t)
	const n = 3
	cmds := make([]*exec.Cmd, n)
	for i := range n {
		env := []string{"SLURM_JOB_ID=77", "SLURM_STEP_ID=0", "SLURM_STEP_NUM_NODES=1", "SLURM_NODEID=0",
			"SLURM_STEP_NUM_TASKS=3", "SLURM_PROCID=" + strconv.Itoa(i), "SLURM_LOCALID=" + strconv.Itoa(i),
			"SLURM_STEP_NODELIST=localhost", "SLURM_STEP_TASKS_PER_NODE=3", "MASTER_PORT=1"}
		// The flag wins over MASTER_PORT=1 from the environment.
		cmds[i] = pplaunch(t, env, "--direct", "--master-addr", "127.0.0.1", "--master-port", port, "bench", "store", "--iters", "10")
	}
	codes, outs := runTogether(t, cmds)
	for i := range n {
		if codes[i] != 0 {
			t.Errorf("rank %d exit %d:\n%s", i, codes[i], outs[i].String())
		}
	}
	if !strings.Contains(outs[0].String(), "store round trips: 3 ranks, store at 127.0.0.1:"+port) {
		t.Fatalf("rank 0 printed:\n%s", outs[0].String())
	}
}

// TestDirectProgramUnderMpirun: --direct -- PROGRAM gets the rank contract
// from Open MPI's variables.
func TestDirectProgramUnderMpirun(t *testing.T) {
	cmd := pplaunch(t, []string{"OMPI_COMM_WORLD_RANK=1", "OMPI_COMM_WORLD_SIZE=2", "OMPI_COMM_WORLD_LOCAL_RANK=1",
		"OMPI_COMM_WORLD_LOCAL_SIZE=2", "RANK=stale"},
		"--direct", "--", "/bin/sh", "-c", `echo "$RANK $WORLD_SIZE $LOCAL_RANK $MASTER_ADDR $PPLAUNCH_ROLE"`)
	out, err := cmd.CombinedOutput()
	if code := exitCode(t, err); code != 0 || string(out) != "1 2 1 127.0.0.1 rank\n" {
		t.Fatalf("exit %d, output %q", code, out)
	}
}

// TestTwoAgentProcesses: two agent processes (--nnodes 2) on loopback form one
// world of 8 ranks running a built-in job.
func TestTwoAgentProcesses(t *testing.T) {
	port := freePort(t)
	cmds := make([]*exec.Cmd, 2)
	for n := range 2 {
		cmds[n] = pplaunch(t, []string{"PPLAUNCH_TOKEN=two-agents-secret"}, "--nnodes", "2", "--node-rank", strconv.Itoa(n), "--rdzv-endpoint", "127.0.0.1:"+port,
			"--rdzv-id", "two-agents", "--rdzv-timeout", "60s", "--nproc", "4", "bench", "store", "--iters", "10")
	}
	codes, outs := runTogether(t, cmds)
	for n := range 2 {
		if codes[n] != 0 {
			t.Errorf("node %d exit %d:\n%s", n, codes[n], outs[n].String())
		}
	}
	if !strings.Contains(outs[0].String(), "[rank 0] store round trips: 8 ranks") ||
		!strings.Contains(outs[1].String(), "this node's ranks are 4..7") {
		t.Fatalf("node 0:\n%s\nnode 1:\n%s", outs[0].String(), outs[1].String())
	}
}

// runTogether starts every command, waits for all and returns each one's exit
// code and combined output.
func runTogether(t *testing.T, cmds []*exec.Cmd) ([]int, []bytes.Buffer) {
	t.Helper()
	errs := make([]error, len(cmds))
	outs := make([]bytes.Buffer, len(cmds))
	var wg sync.WaitGroup
	for i, cmd := range cmds {
		cmd.Stdout, cmd.Stderr = &outs[i], &outs[i]
		if err := cmd.Start(); err != nil {
			for _, started := range cmds[:i] {
				started.Process.Kill()
			}
			wg.Wait()
			t.Fatal(err)
		}
		wg.Go(func() { errs[i] = cmd.Wait() })
	}
	wg.Wait()
	codes := make([]int, len(cmds))
	for i, err := range errs {
		codes[i] = exitCode(t, err) // here: t.Fatal only on the test's goroutine
	}
	return codes, outs
}
