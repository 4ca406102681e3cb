package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pplaunch/pplaunch/launch/netns"
	"github.com/pplaunch/pplaunch/plan"
	"github.com/pplaunch/pplaunch/ranks"
)

// rebalances are the --metrics records of a job's rebalances.
func rebalances(t *testing.T, r jobResult) []ranks.EventRecord {
	t.Helper()
	var out []ranks.EventRecord
	for _, line := range r.events {
		var e ranks.EventRecord
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("metrics line %q: %v", line, err)
		}
		if e.Record == ranks.RecordRebalance {
			out = append(out, e)
		}
	}
	return out
}

// medianStepS is the median step time of the records of steps first..last
// (counted from 1).
func medianStepS(r jobResult, first, last int) float64 {
	var s []float64
	for _, m := range r.metrics {
		if m.Step >= first && m.Step <= last {
			s = append(s, m.StepS)
		}
	}
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	return s[len(s)/2]
}

// TestTrainRebalanceSlowedStage: rank 1 of a pp=2 job takes 500 ms more per
// block and micro-batch (PPLAUNCH_TEST_SLOW=1:500:add: counted in its
// measured time, not burnt, so that the decisions do not depend on how busy
// the machine is), thousands of times its blocks' own time; --rebalance every:3 moves blocks off it after step 3, and again
// after step 6 where the first move left it the slowest (a unit costs what
// it was measured to cost: the blocks it gave away looked slow until they
// ran elsewhere). Every move is one log line and one --metrics record, the
// first and the last leave the slowed stage fewer blocks, no move repeats,
// and the job ends with the
// parameters and optimizer state, bit for bit, of a job checkpointed at
// each move's step and resumed with its cut (--layers-per-stage), and of one
// process. The step times before and after are logged, not asserted.
func TestTrainRebalanceSlowedStage(t *testing.T) {
	const steps = 8
	args := append(slices.Clone(tinyModel), "--microbatches", "4", "--steps", fmt.Sprint(steps), "--lr-decay-steps", fmt.Sprint(steps))
	slow := []string{ranks.SlowEnv + "=1:500:add"}
	dir := t.TempDir()
	r := runJob(t, 2, 0, slow, append(args, "--rebalance", "every:3", "--checkpoint-dir", dir)...)
	mustSucceed(t, r, "pp=2 job with --rebalance every:3")
	moves := rebalances(t, r)
	if len(moves) == 0 || moves[0].Step != 3 || !slices.Equal(moves[0].CutBefore, []int{4, 4}) {
		t.Fatalf("rebalances %+v, want a first one after step 3 from 4,4\n%s", moves, r.out)
	}
	if moves[0].Cut[1] >= 4 || moves[len(moves)-1].Cut[1] >= 4 {
		t.Errorf("rebalances %+v: want the first and the last to leave the slowed stage 1 fewer than its 4 blocks", moves)
	}
	pairs := map[string]bool{}
	for i, mv := range moves {
		if len(mv.Cut) != 2 || (i > 0 && !slices.Equal(mv.CutBefore, moves[i-1].Cut)) || pairs[fmt.Sprint(mv.CutBefore, mv.Cut)] {
			t.Fatalf("rebalance after step %d from %v to %v: want a 2-stage cut, from the cut before, and no move twice", mv.Step, mv.CutBefore, mv.Cut)
		}
		pairs[fmt.Sprint(mv.CutBefore, mv.Cut)] = true
		line := fmt.Sprintf("rebalance after step %d: --layers-per-stage %s -> %s", mv.Step, plan.FormatCut(mv.CutBefore), plan.FormatCut(mv.Cut))
		if !strings.Contains(r.out, line) {
			t.Errorf("no line %q in the log:\n%s", line, r.out)
		}
	}
	if n := strings.Count(r.out, "rebalance after step"); n != len(moves) {
		t.Errorf("%d rebalance lines in the log, %d records", n, len(moves))
	}
	last := moves[len(moves)-1]
	t.Logf("cut 4,4 -> %s in %d moves: median step %.4f s before (steps 2-3), %.4f s after the last (steps %d-%d); the first predicted %.4f s -> %.4f s",
		plan.FormatCut(last.Cut), len(moves), medianStepS(r, 2, 3), medianStepS(r, last.Step+2, steps), last.Step+2, steps, moves[0].PredictedBeforeS, moves[0].PredictedS)

	// The same run as resumes: to each move's step with the cut before it,
	// then on with the cut after.
	resumed, cut, from := t.TempDir(), "4,4", 0
	for _, mv := range append(moves, ranks.EventRecord{Step: steps}) {
		seg := append(slices.Clone(args), "--steps", fmt.Sprint(mv.Step), "--layers-per-stage", cut, "--checkpoint-dir", resumed)
		if from > 0 {
			seg = append(seg, "--resume")
		}
		rr := runJob(t, 2, 0, nil, seg...)
		mustSucceed(t, rr, fmt.Sprintf("pp=2 job from step %d to %d with cut %s", from, mv.Step, cut))
		if len(rr.metrics) != mv.Step-from || rr.metrics[0].Step != from+1 {
			t.Fatalf("the job from step %d ran %d steps, want %d..%d:\n%s", from, len(rr.metrics), from+1, mv.Step, rr.out)
		}
		cut, from = plan.FormatCut(mv.Cut), mv.Step
	}
	compare(t, dir, resumed)
	one := t.TempDir()
	mustSucceed(t, runJob(t, 1, 0, nil, append(args, "--checkpoint-dir", one)...), "one process")
	compare(t, dir, one)
}

// TestTrainRebalanceRefusals: what a live move cannot carry is refused
// before any rank starts, naming what to change.
func TestTrainRebalanceRefusals(t *testing.T) {
	for _, tc := range []struct {
		n    int
		args []string
		want string
	}{
		{2, []string{"--rebalance", "every:0"}, "every:N"},
		{4, []string{"--rebalance", "auto", "--dp", "2", "--zero", "1"}, "--zero 0"},
		{2, []string{"--rebalance", "auto", "--rebalance-threshold", "-1"}, "--rebalance-threshold"},
	} {
		r := runJob(t, tc.n, 0, nil, append(append(slices.Clone(tinyModel), "--microbatches", "4"), tc.args...)...)
		if r.code != 2 || !strings.Contains(r.out, tc.want) {
			t.Errorf("%v: exit %d, want 2 with %q:\n%s", tc.args, r.code, tc.want, r.out)
		}
	}
}

// TestTrainRebalanceTwoHosts: the slowed-stage job on two simulated hosts
// (network namespaces, one agent and one rank each, the slowed rank on the
// second): the blocks cross the hosts' link, leave the slowed stage, and the
// job ends with the bits of one process.
func TestTrainRebalanceTwoHosts(t *testing.T) {
	n := netns.New(t, "rbl1", "rbl2") // skips without root, saying why
	args := append(slices.Clone(tinyModel), "--microbatches", "4", "--steps", "8", "--lr-decay-steps", "8")
	one := t.TempDir()
	mustSucceed(t, runJob(t, 1, 0, nil, append(args, "--checkpoint-dir", one)...), "one process")
	dir := t.TempDir()
	metrics := filepath.Join(dir, "metrics.jsonl")
	outs := runOnHosts(t, n, []string{"PPLAUNCH_TOKEN=train-rebalance-hosts-secret", ranks.SlowEnv + "=1:500:add"}, func(i int) []string {
		return append([]string{"--nnodes", "2", "--node-rank", fmt.Sprint(i), "--rdzv-endpoint", n.Hosts[0].Name + ":29400",
			"--rdzv-id", "train-rebalance-hosts", "--rdzv-timeout", "60s", "--nproc", "1",
			"train", "--metrics", metrics, "--checkpoint-dir", filepath.Join(dir, "ckpt"), "--rebalance", "every:3"}, args...)
	})
	b, err := os.ReadFile(metrics)
	if err != nil {
		t.Fatal(err)
	}
	r := jobResult{events: strings.Split(strings.TrimSpace(string(b)), "\n")}
	moves := rebalances(t, r)
	if len(moves) == 0 || moves[0].Step != 3 || !slices.Equal(moves[0].CutBefore, []int{4, 4}) || moves[0].Cut[1] >= 4 {
		t.Fatalf("rebalances %+v, want a first one after step 3 taking blocks off the slowed stage 1 of 4,4\n%s", moves, outs[0])
	}
	t.Logf("%s", strings.Join(strings.Split(strings.TrimSpace(string(outs[0])), "\n")[2:], "\n"))
	compare(t, filepath.Join(dir, "ckpt"), one)
}

// runOnHosts runs the binary as an agent on every simulated host at once,
// with argv(i) on host i and env added, and returns each one's output; an
// agent that fails fails the test.
func runOnHosts(t *testing.T, n *netns.Net, env []string, argv func(i int) []string) [][]byte {
	t.Helper()
	bin := binary(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	outs := make([][]byte, len(n.Hosts))
	errs := make([]error, len(n.Hosts))
	var wg sync.WaitGroup
	for i, h := range n.Hosts {
		cmd := h.Command(ctx, bin, argv(i)...)
		cmd.Env = append(os.Environ(), env...)
		wg.Add(1)
		go func() {
			defer wg.Done()
			outs[i], errs[i] = cmd.CombinedOutput()
		}()
	}
	wg.Wait()
	for i := range n.Hosts {
		if errs[i] != nil {
			t.Fatalf("agent on %s: %v\n%s", n.Hosts[i].Name, errs[i], outs[i])
		}
	}
	return outs
}
