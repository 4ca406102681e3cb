package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/pplaunch/pplaunch/launch/netns"
	"github.com/pplaunch/pplaunch/launch/slurmtest"
	"github.com/pplaunch/pplaunch/ranks"
	"github.com/pplaunch/pplaunch/schedules"
)

// The end-to-end tests run the built binary: its agent starts the ranks, which
// talk over TCP. The binary is built once, without -race, so that the
// many short jobs stay fast; the race detector covers the packages' own tests.
var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
	// jobs bounds how many jobs run at once on this small machine.
	jobs = make(chan struct{}, 3)
)

func binary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "pplaunch-train-test")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "pplaunch")
		out, err := exec.Command("go", "build", "-o", binPath, ".").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

// jobResult is what one job left.
type jobResult struct {
	code    int
	out     string
	metrics []ranks.StepRecord
	events  []string // --metrics' lines of evaluations and checkpoints
}

// runJob runs `pplaunch --nproc n --standalone --max-restarts r train ARGS`,
// with extra environment env, and reads rank 0's --metrics.
func runJob(t *testing.T, n, restarts int, env []string, args ...string) jobResult {
	t.Helper()
	return runJobWithin(t, 3*time.Minute, n, restarts, env, args...)
}

// runJobWithin is runJob with the job killed after limit (exit code -1).
func runJobWithin(t *testing.T, limit time.Duration, n, restarts int, env []string, args ...string) jobResult {
	t.Helper()
	bin := binary(t)
	jobs <- struct{}{}
	defer func() { <-jobs }()
	metrics := filepath.Join(t.TempDir(), "metrics.jsonl")
	args = append([]string{"train", "--metrics", metrics}, args...)
	var out bytes.Buffer
	w := &lockedWriter{w: &out}
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	argv := append([]string{"--nproc", fmt.Sprint(max(n, 1)), "--standalone", "--max-restarts", fmt.Sprint(restarts), "--grace-period", "2s"}, args...)
	cmd := exec.CommandContext(ctx, bin, argv...)
	cmd.Env, cmd.Stdout, cmd.Stderr = append(os.Environ(), env...), w, w
	code := 0
	if err := cmd.Run(); err != nil {
		code = -1
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		}
	}
	res := jobResult{code: code, out: out.String()}
	if f, err := os.Open(metrics); err == nil {
		defer f.Close()
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			var r ranks.StepRecord
			if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
				t.Fatalf("metrics line %q: %v", sc.Text(), err)
			}
			if r.Record == ranks.RecordStep {
				res.metrics = append(res.metrics, r)
			} else {
				res.events = append(res.events, sc.Text())
			}
		}
	}
	return res
}

type lockedWriter struct {
	mu sync.Mutex
	w  *bytes.Buffer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// tinyModel is a model small enough for many short jobs, with 8 blocks so
// that pp 4 × v 2 has a block per stage, and tied embeddings so that the
// first and last stage exchange gradients.
var tinyModel = []string{"--layers", "8", "--width", "32", "--heads", "2", "--seq", "16", "--tied",
	"--microbatch-size", "2", "--steps", "2", "--eval-every", "0", "--eval-batches", "1", "--timeout", "60s"}

func losses(r jobResult) []float64 {
	var l []float64
	for _, m := range r.metrics {
		l = append(l, m.Loss)
	}
	return l
}

// compare runs `pplaunch checkpoint compare` (exact) on two checkpoint roots.
func compare(t *testing.T, a, b string) {
	t.Helper()
	out, err := exec.Command(binary(t), "checkpoint", "compare", a, b).CombinedOutput()
	if err != nil {
		t.Errorf("checkpoint compare %s %s: %v\n%s", a, b, err, out)
	}
}

func mustSucceed(t *testing.T, r jobResult, what string) {
	t.Helper()
	if r.code != 0 {
		t.Fatalf("%s: exit %d\n%s", what, r.code, r.out)
	}
}

// TestTrainEquivalence: every schedule (gpipe, 1f1b, interleaved v=2, zb-h1,
// zb-v), pp ∈ {1,2,4}, dp ∈ {1,2}, with and
// without recomputation, gives bit for bit the losses and final parameters
// (and optimizer state) of one process with the same global batch.
func TestTrainEquivalence(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the equivalence matrix runs about fifty multi-process jobs")
	}
	const M = 4
	refs := map[int]jobResult{}
	refDir := map[int]string{}
	for _, dp := range []int{1, 2} {
		refDir[dp] = t.TempDir()
		refs[dp] = runJob(t, 1, 0, nil, append([]string{"--microbatches", fmt.Sprint(dp * M), "--schedule", "gpipe", "--checkpoint-dir", refDir[dp]}, tinyModel...)...)
		mustSucceed(t, refs[dp], "single-process reference")
		if len(refs[dp].metrics) != 2 {
			t.Fatalf("reference dp=%d: %d metric lines, want 2", dp, len(refs[dp].metrics))
		}
	}
	for _, sched := range schedules.Names {
		for _, pp := range []int{1, 2, 4} {
			for _, dp := range []int{1, 2} {
				for _, rc := range []bool{false, true} {
					name := fmt.Sprintf("%s/pp%d/dp%d/recompute=%v", sched, pp, dp, rc)
					t.Run(name, func(t *testing.T) {
						t.Parallel()
						dir := t.TempDir()
						args := append([]string{"--schedule", sched, "--microbatches", fmt.Sprint(M), "--dp", fmt.Sprint(dp), "--checkpoint-dir", dir}, tinyModel...)
						if rc {
							args = append(args, "--recompute")
						}
						r := runJob(t, pp*dp, 0, nil, args...)
						mustSucceed(t, r, name)
						if got, want := losses(r), losses(refs[dp]); fmt.Sprint(got) != fmt.Sprint(want) {
							t.Errorf("losses %v, single process %v", got, want)
						}
						compare(t, dir, refDir[dp])
					})
				}
			}
		}
	}
}

// TestTrainDefault runs the README's command as the agent runs it (4 ranks,
// 1F1B, 8 micro-batches), shortened to a few steps, and checks the output.
func TestTrainDefault(t *testing.T) {
	dir := t.TempDir()
	trace, svg := filepath.Join(dir, "trace.json"), filepath.Join(dir, "trace.svg")
	r := runJob(t, 4, 0, nil, "--steps", "3", "--eval-every", "2", "--trace", trace, "--trace-svg", svg)
	mustSucceed(t, r, "pplaunch --nproc 4 train --steps 3")
	if len(r.metrics) != 3 {
		t.Fatalf("%d metric lines, want 3\n%s", len(r.metrics), r.out)
	}
	m := r.metrics[1]
	if m.ValLoss == nil || len(m.PeakActivation) != 4 || m.TokensPerS <= 0 || m.BubbleMeasured <= 0 || m.BubblePredicted <= 0 {
		t.Errorf("step 2 record incomplete: %+v", m)
	}
	for _, want := range []string{"schedule 1f1b, 8 micro-batches", "step 3/3", "summary:", "rank 3: peak activations"} {
		if !strings.Contains(r.out, want) {
			t.Errorf("output lacks %q:\n%s", want, r.out)
		}
	}
	var tr struct {
		TraceEvents []struct {
			Pid int `json:"pid"`
		} `json:"traceEvents"`
	}
	b, err := os.ReadFile(trace)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &tr); err != nil {
		t.Fatalf("trace is not JSON: %v", err)
	}
	pids := map[int]bool{}
	for _, e := range tr.TraceEvents {
		pids[e.Pid] = true
	}
	if len(pids) < 4 {
		t.Errorf("trace has events of %d processes, want the 4 ranks", len(pids))
	}
	// 1F1B on 4 ranks: 3 boundaries × 8 micro-batches × 2 directions per step.
	checkTraceFlows(t, b, 3*3*8*2)
	if b, err := os.ReadFile(svg); err != nil || !bytes.Contains(b, []byte("<svg")) {
		t.Errorf("trace svg: %v", err)
	}
}

// TestTrainKilledRankRestarts: rank 2 of a 4-rank job is SIGKILLed before
// step 3 (test hook); with --max-restarts 1 the agent restarts the group,
// which resumes from the step-2 checkpoint and ends with the parameters of
// an uninterrupted run.
func TestTrainKilledRankRestarts(t *testing.T) {
	args := append([]string{"--microbatches", "4", "--checkpoint-every", "2"}, tinyModel...)
	args = append(args, "--steps", "5")
	ref, killed := t.TempDir(), t.TempDir()
	r := runJob(t, 4, 0, nil, append(args, "--checkpoint-dir", ref)...)
	mustSucceed(t, r, "uninterrupted run")
	k := runJob(t, 4, 1, []string{ranks.KillEnv + "=2:3"}, append(args, "--checkpoint-dir", killed)...)
	mustSucceed(t, k, "run with a killed rank and --max-restarts 1")
	for _, want := range []string{"SIGKILL before step 3", "resumed from " + filepath.Join(killed, "step-000002")} {
		if !strings.Contains(k.out, want) {
			t.Errorf("output lacks %q:\n%s", want, k.out)
		}
	}
	compare(t, killed, ref)
}

// TestTrainStalledRank: in a 2-stage pipeline rank 1 hangs before its forward
// of micro-batch 2 in step 1 (test hook). Rank 0's wait for it times out after
// --timeout; the job fails within timeout plus grace (the job's context would
// end it otherwise), and the summary says the action rank 0 waited in
// and the stalled peer. The summary names the stalled rank 1 as the root
// cause, with its last action (its progress file), and rank 0's timeout.
func TestTrainStalledRank(t *testing.T) {
	args := append([]string{"--microbatches", "4"}, tinyModel...)
	args = append(args, "--steps", "3", "--timeout", "3s")
	// Timeout 3s plus grace 2s, and room for starting the ranks on a busy machine.
	r := runJobWithin(t, 30*time.Second, 2, 0, []string{ranks.StallEnv + "=1:1:1F2"}, args...)
	if r.code == 0 || r.code == -1 {
		t.Fatalf("exit %d, want the failure code of the rank that timed out (-1: still running after 30s)\n%s", r.code, r.out)
	}
	if !strings.Contains(r.out, "stalling before 1F2 of step 1") {
		t.Fatalf("the hook did not fire:\n%s", r.out)
	}
	// The wait's clock starts after the receive has polled its socket for a
	// while (collective's spin before parking), so on a loaded machine the
	// time it reports may fall a few milliseconds short of the 3s deadline.
	re := regexp.MustCompile(`root cause: rank 1 \(local rank 1,[^\n]* was silent: running, but it did not answer; its last action: step 1 1F2,[^\n]*; ` +
		`rank 0 timed out waiting for it: step 1: 0RECV_B\d+ \(global mb=\d+\) with rank 1: .*timeout after (2\.9\d*|3[.0-9]*)s`)
	if !re.MatchString(r.out) {
		t.Errorf("the stalled rank 1 is not the root cause, with its last action and rank 0's timeout (want %s):\n%s", re, r.out)
	}
}

// TestTrainActivationMemory: measured peak activations per rank, in
// micro-batch units, are what the simulator predicts for GPipe and 1F1B, and
// 1F1B's are at most GPipe's on every rank.
func TestTrainActivationMemory(t *testing.T) {
	const P, M = 4, 8
	peaks := map[string][]int64{}
	for _, name := range []string{"gpipe", "1f1b"} {
		r := runJob(t, P, 0, nil, append([]string{"--schedule", name, "--microbatches", fmt.Sprint(M)}, append(tinyModel, "--steps", "1")...)...)
		mustSucceed(t, r, name)
		s, err := schedules.Generate(name, P, M, 1)
		if err != nil {
			t.Fatal(err)
		}
		tl, err := schedules.Simulate(s, schedules.Costs{Default: schedules.StageCost{F: 1, B: 2, I: 1, W: 1}})
		if err != nil {
			t.Fatal(err)
		}
		st, err := schedules.Analyze(s, tl, nil)
		if err != nil {
			t.Fatal(err)
		}
		got := r.metrics[0].PeakMicroBatches
		if fmt.Sprint(got) != fmt.Sprint(st.PeakLive) {
			t.Errorf("%s: measured peak activations %v micro-batches per rank, simulator %v", name, got, st.PeakLive)
		}
		peaks[name] = r.metrics[0].PeakActivation
	}
	for r := range P {
		if peaks["1f1b"][r] > peaks["gpipe"][r] {
			t.Errorf("rank %d: 1F1B holds %d activation bytes at peak, GPipe %d", r, peaks["1f1b"][r], peaks["gpipe"][r])
		}
	}
	t.Logf("peak activation bytes per rank: gpipe %v, 1f1b %v", peaks["gpipe"], peaks["1f1b"])
}

// TestTrainTwoNodes runs a pp=4 job on two simulated hosts (network
// namespaces, 2 ranks each), one agent per host as a user would start them
// on two machines, and checks it equals one process bit for bit.
func TestTrainTwoNodes(t *testing.T) {
	n := netns.New(t, "trn1", "trn2") // skips without root, saying why
	args := append([]string{"--microbatches", "4"}, tinyModel...)
	refDir, dir := t.TempDir(), t.TempDir()
	ref := runJob(t, 1, 0, nil, append(args, "--checkpoint-dir", refDir)...)
	mustSucceed(t, ref, "single-process reference")
	metrics := filepath.Join(dir, "metrics.jsonl")
	endpoint := n.Hosts[0].Name + ":29400"
	outs := runOnHosts(t, n, []string{"PPLAUNCH_TOKEN=train-two-nodes-secret"}, func(i int) []string {
		return append([]string{"--nnodes", "2", "--node-rank", fmt.Sprint(i), "--rdzv-endpoint", endpoint,
			"--rdzv-id", "train-two-nodes", "--rdzv-timeout", "60s", "--nproc", "2",
			"train", "--metrics", metrics, "--checkpoint-dir", filepath.Join(dir, "ckpt")}, args...)
	})
	if !strings.Contains(string(outs[0]), "4 ranks = pp 4 × dp 1") {
		t.Errorf("node 0's output does not show a 4-rank pipeline:\n%s", outs[0])
	}
	compare(t, filepath.Join(dir, "ckpt"), refDir)
	b, err := os.ReadFile(metrics)
	if err != nil {
		t.Fatal(err)
	}
	var got []float64
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var r ranks.StepRecord
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatal(err)
		}
		if r.Record == ranks.RecordStep {
			got = append(got, r.Loss)
		}
	}
	if fmt.Sprint(got) != fmt.Sprint(losses(ref)) {
		t.Errorf("losses %v on two nodes, one process %v", got, losses(ref))
	}
}

// TestTrainResumeOtherLayout: a run checkpointed at step 2 on pp=2 and
// continued with --resume on pp=4 (its step-4 checkpoint removed first) ends
// with the parameters of the uninterrupted pp=2 run.
func TestTrainResumeOtherLayout(t *testing.T) {
	args := append([]string{"--microbatches", "4", "--checkpoint-every", "2"}, tinyModel...)
	args = append(args, "--steps", "4")
	ref, dir := t.TempDir(), t.TempDir()
	mustSucceed(t, runJob(t, 2, 0, nil, append(args, "--checkpoint-dir", ref)...), "pp=2 run")
	mustSucceed(t, runJob(t, 2, 0, nil, append(args, "--checkpoint-dir", dir)...), "pp=2 run")
	if err := os.RemoveAll(filepath.Join(dir, "step-000004")); err != nil {
		t.Fatal(err)
	}
	r := runJob(t, 4, 0, nil, append(args, "--checkpoint-dir", dir, "--resume")...)
	mustSucceed(t, r, "pp=4 run resumed")
	if !strings.Contains(r.out, "resumed from "+filepath.Join(dir, "step-000002")) || len(r.metrics) != 2 || r.metrics[0].Step != 3 {
		t.Errorf("did not resume at step 2 (%d metric lines):\n%s", len(r.metrics), r.out)
	}
	compare(t, dir, ref)
}

// TestTrainSlurm submits examples/slurm/agent-per-node.sbatch to a real
// two-node Slurm cluster (slurmd per network namespace): one agent per node,
// 2 ranks each, a pp=4 job that equals one process bit for bit.
func TestTrainSlurm(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts a Slurm cluster")
	}
	c := slurmtest.Start(t, slurmtest.Options{Nodes: []string{"tsl1", "tsl2"}}) // skips without root, saying why
	bin := binary(t)
	args := append([]string{"--microbatches", "4"}, tinyModel...)
	refDir, dir := t.TempDir(), t.TempDir()
	ref := runJob(t, 1, 0, nil, append(args, "--checkpoint-dir", refDir)...)
	mustSucceed(t, ref, "single-process reference")
	script, err := filepath.Abs("../../examples/slurm/agent-per-node.sbatch")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := c.WaitIdle(ctx); err != nil {
		t.Fatal(err)
	}
	r, err := c.Run(ctx, slurmtest.Job{
		Script: script,
		Args:   append([]string{"train", "--checkpoint-dir", dir}, args...),
		Env:    []string{"PPLAUNCH=" + bin, "NPROC=2"},
	})
	if err != nil {
		t.Fatalf("sbatch agent-per-node.sbatch train: %v\n%s", err, c.Logs())
	}
	if !strings.Contains(r.Output, "4 ranks = pp 4 × dp 1") {
		t.Errorf("job %d output does not show a 4-rank pipeline:\n%s", r.ID, r.Output)
	}
	compare(t, dir, refDir)
}

// TestTrainBadFlags: a layout that does not fit the world, or an unknown
// schedule, is a clear error and a failed job through the binary, whether
// the agent finds it before starting the ranks (trainCmd.run) or the ranks.
func TestTrainBadFlags(t *testing.T) {
	for _, tc := range []struct {
		n    int
		args []string
		want string
	}{
		{4, []string{"--dp", "3"}, "--dp 3 does not divide the world of 4 ranks"},
		{2, []string{"--pp", "4"}, "--pp 4 needs at least 4 ranks, but the world has 2"},
		{2, []string{"--pp", "4", "--dp", "1"}, "--pp 4 × --dp 1 = 4 ranks, but the world has 2"},
		{2, []string{"--schedule", "foo"}, `--schedule "foo": want one of gpipe, 1f1b`},
		{2, []string{"--dp", "2", "--microbatches", "3"}, "needs --microbatches a power of two"},
		{1, []string{"--checkpoint-every", "2"}, "need --checkpoint-dir"},
	} {
		r := runJob(t, tc.n, 0, nil, append(append([]string{}, tinyModel...), tc.args...)...)
		if r.code == 0 || !strings.Contains(r.out, tc.want) {
			t.Errorf("%v on %d ranks: exit %d, want a failure saying %q:\n%s", tc.args, tc.n, r.code, tc.want, r.out)
		}
	}
}

// runPreempted runs `pplaunch --nproc n train ARGS` with extra environment
// env and sends sig to the agent once rank 0 has printed the line of step
// `after` (of steps). It returns the agent's exit code and output.
func runPreempted(t *testing.T, sig syscall.Signal, after, steps, n int, env []string, args ...string) (int, string) {
	t.Helper()
	jobs <- struct{}{}
	defer func() { <-jobs }()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// A long grace period: the ranks finish the step and write the
	// checkpoint after SIGTERM, before the agent would SIGKILL them.
	argv := append([]string{"--nproc", fmt.Sprint(n), "--standalone", "--grace-period", "60s", "train"}, args...)
	cmd := exec.CommandContext(ctx, binary(t), argv...)
	var out bytes.Buffer
	w := &lockedWriter{w: &out}
	cmd.Env, cmd.Stderr = append(os.Environ(), env...), w
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sent := false
	mark := fmt.Sprintf("step %d/%d ", after, steps)
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		fmt.Fprintln(w, sc.Text())
		if !sent && strings.Contains(sc.Text(), mark) {
			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			sent = true
		}
	}
	code := 0
	if err := cmd.Wait(); err != nil {
		code = -1
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		}
	}
	if !sent {
		t.Fatalf("rank 0 never printed %q (exit %d):\n%s", mark, code, out.String())
	}
	return code, out.String()
}

// TestTrainPreempted: SIGUSR1 (Slurm's preemption warning) or SIGTERM sent
// to the agent of a 2-rank job mid-run makes the ranks finish the step, write
// a complete checkpoint together and exit (0 after SIGUSR1; 128+15 after
// SIGTERM, so the agent reports it); --resume then ends with exactly the
// parameters of an uninterrupted run. Rank 0 waits before step 3 for the
// signal (a test hook), so the signal always lands mid-run: the ranks stop
// after step 4 of 6.
func TestTrainPreempted(t *testing.T) {
	args := append([]string{"--microbatches", "4"}, tinyModel...)
	args = append(args, "--steps", "6")
	ref := t.TempDir()
	mustSucceed(t, runJob(t, 2, 0, nil, append(args, "--checkpoint-dir", ref)...), "uninterrupted run")
	for _, tc := range []struct {
		sig  syscall.Signal
		name string
		code int
	}{{syscall.SIGUSR1, "SIGUSR1", 0}, {syscall.SIGTERM, "SIGTERM", 128 + int(syscall.SIGTERM)}} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			code, out := runPreempted(t, tc.sig, 3, 6, 2, []string{ranks.HoldEnv + "=0:3"}, append(args, "--checkpoint-dir", dir)...)
			if code != tc.code {
				t.Fatalf("exit %d after %s, want %d:\n%s", code, tc.name, tc.code, out)
			}
			stopped := filepath.Join(dir, "step-000004")
			for _, want := range []string{"received " + tc.name + ": stopping after this step", "stopped after step 4 of 6 on " + tc.name, "checkpoint: " + stopped} {
				if !strings.Contains(out, want) {
					t.Errorf("output lacks %q:\n%s", want, out)
				}
			}
			if strings.Contains(out, "step 5/6") {
				t.Errorf("ran past step 4:\n%s", out)
			}
			r := runJob(t, 2, 0, nil, append(args, "--checkpoint-dir", dir, "--resume")...)
			mustSucceed(t, r, "resumed run")
			if !strings.Contains(r.out, "resumed from "+stopped) || len(r.metrics) != 2 {
				t.Errorf("did not resume from %s (%d metric lines):\n%s", stopped, len(r.metrics), r.out)
			}
			compare(t, dir, ref)
		})
	}
}

// TestTrainDirectBadFlags: under --direct (srun or mpirun start the ranks,
// no agent checks first) the rank itself refuses a layout that does not fit
// its world.
func TestTrainDirectBadFlags(t *testing.T) {
	env := []string{"SLURM_JOB_ID=78", "SLURM_STEP_ID=0", "SLURM_STEP_NUM_NODES=1", "SLURM_NODEID=0",
		"SLURM_STEP_NUM_TASKS=1", "SLURM_PROCID=0", "SLURM_LOCALID=0",
		"SLURM_STEP_NODELIST=localhost", "SLURM_STEP_TASKS_PER_NODE=1"}
	cmd := exec.Command(binary(t), append([]string{"--direct", "--master-addr", "127.0.0.1", "--master-port", freePort(t), "train", "--pp", "3"}, tinyModel...)...)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	want := "pplaunch: rank 0: train: --pp 3 needs at least 3 ranks, but the world has 1"
	if code := exitCode(t, err); code != 1 || !strings.Contains(string(out), want) {
		t.Errorf("exit %d, want 1 and %q:\n%s", code, want, out)
	}
}
