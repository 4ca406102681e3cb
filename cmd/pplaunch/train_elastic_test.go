package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pplaunch/pplaunch/launch/netns"
	"github.com/pplaunch/pplaunch/ranks"
	"github.com/pplaunch/pplaunch/store/etcdstore/etcdtest"
	"github.com/pplaunch/pplaunch/store/etcdstore/gateway"
)

// watchedOutput is an agent's combined output, with a wait for a line
// holding some text (no sleeps: the writer wakes the waiters).
type watchedOutput struct {
	mu    sync.Mutex
	buf   bytes.Buffer
	seen  []timedLine
	wake  chan struct{}
	carry string
}

type timedLine struct {
	at   time.Time
	text string
}

func newWatchedOutput() *watchedOutput { return &watchedOutput{wake: make(chan struct{})} }

func (w *watchedOutput) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	lines := strings.Split(w.carry+string(p), "\n")
	w.carry = lines[len(lines)-1]
	now := time.Now()
	for _, l := range lines[:len(lines)-1] {
		w.seen = append(w.seen, timedLine{now, l})
	}
	close(w.wake)
	w.wake = make(chan struct{})
	return len(p), nil
}

func (w *watchedOutput) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

// waitFor returns the first line at or after line from holding text, its
// index and when it was written; it fails the test when ctx ends first.
func (w *watchedOutput) waitFor(t *testing.T, ctx context.Context, from int, text string) (int, timedLine) {
	t.Helper()
	for {
		w.mu.Lock()
		for i := from; i < len(w.seen); i++ {
			if strings.Contains(w.seen[i].text, text) {
				l := w.seen[i]
				w.mu.Unlock()
				return i, l
			}
		}
		wake := w.wake
		w.mu.Unlock()
		select {
		case <-wake:
		case <-ctx.Done():
			t.Fatalf("no line with %q: %v; output so far:\n%s", text, ctx.Err(), w.String())
		}
	}
}

// elasticAgent is one agent of an elastic job on a simulated host.
type elasticAgent struct {
	cmd  *exec.Cmd
	out  *watchedOutput
	done chan error
}

func startElasticAgent(t *testing.T, ctx context.Context, h *netns.Host, node int, nnodes string, rdzv []string, id string, env []string, args ...string) *elasticAgent {
	t.Helper()
	argv := append(append([]string{"--nnodes", nnodes, "--node-rank", fmt.Sprint(node), "--rdzv-id", id, "--rdzv-timeout", "60s",
		"--nproc", "2", "--max-restarts", "3", "--grace-period", "10s"}, rdzv...), append([]string{"train"}, args...)...)
	a := &elasticAgent{cmd: h.Command(ctx, binary(t), argv...), out: newWatchedOutput(), done: make(chan error, 1)}
	a.cmd.Env = append(append(os.Environ(), "PPLAUNCH_TOKEN="+id+"-secret"), env...)
	a.cmd.Stdout, a.cmd.Stderr = a.out, a.out
	if err := a.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { a.done <- a.cmd.Wait() }()
	t.Cleanup(func() {
		a.cmd.Process.Kill()
		<-a.done
	})
	return a
}

// tcpRdzv are the launcher flags of a rendezvous at the built-in store on
// node 0, at endpoint.
func tcpRdzv(endpoint string) []string { return []string{"--rdzv-endpoint", endpoint} }

// elasticRdzv are the launcher flags of an elastic test's rendezvous on n:
// node 0's store at port, or (overEtcd) a real etcd, started for the test
// on n's gateway: the hosts' namespaces do not share the machine's
// loopback, but every host reaches the machine's side of their network.
func elasticRdzv(t *testing.T, n *netns.Net, port int, overEtcd bool) []string {
	t.Helper()
	if !overEtcd {
		return tcpRdzv(fmt.Sprintf("%s:%d", n.Hosts[0].Name, port))
	}
	srv := etcdtest.Start(t, etcdtest.Options{Host: n.Gateway.String()}) // skips without etcd, saying why
	return []string{"--rdzv-backend", "etcd", "--rdzv-endpoint", srv.Endpoint}
}

// overBackends runs f as one subtest per rendezvous backend, node 0's store
// and etcd, with its launcher flags (elasticRdzv at port).
func overBackends(t *testing.T, n *netns.Net, port int, f func(t *testing.T, rdzv []string)) {
	for _, tc := range []struct {
		name string
		etcd bool
	}{{"built-in store", false}, {"over etcd", true}} {
		t.Run(tc.name, func(t *testing.T) { f(t, elasticRdzv(t, n, port, tc.etcd)) })
	}
}

// startElasticAgents starts an agent of a --nnodes 2:3 job on each of hosts,
// node i on hosts[i], meeting as the launcher flags rdzv say, and waits (on
// its output) until rank 0 holds before step 9 (hold must hold it there).
func startElasticAgents(t *testing.T, ctx context.Context, hosts []*netns.Host, rdzv []string, id string, hold []string, args ...string) []*elasticAgent {
	t.Helper()
	var agents []*elasticAgent
	for i, h := range hosts {
		agents = append(agents, startElasticAgent(t, ctx, h, i, "2:3", rdzv, id, hold, args...))
	}
	agents[0].out.waitFor(t, ctx, 0, "waiting for a preemption signal before step 9")
	return agents
}

// mustExitZero waits for the agent and fails the test unless it exited 0.
func (a *elasticAgent) mustExitZero(t *testing.T, what string) {
	t.Helper()
	err := <-a.done
	a.done <- err // for the cleanup
	if err != nil {
		t.Fatalf("%s: %v\n%s", what, err, a.out.String())
	}
}

// elasticRecords reads --metrics: the step records and the re-layouts, and
// for each re-layout the step of the last step record before it.
func elasticRecords(t *testing.T, path string) (steps []ranks.StepRecord, relayouts []ranks.RelayoutRecord, before []int) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var kind struct{ Record string }
		if err := json.Unmarshal([]byte(line), &kind); err != nil {
			t.Fatalf("--metrics line %q: %v", line, err)
		}
		switch kind.Record {
		case ranks.RecordStep:
			var r ranks.StepRecord
			json.Unmarshal([]byte(line), &r)
			steps = append(steps, r)
		case ranks.RecordRelayout:
			var r ranks.RelayoutRecord
			json.Unmarshal([]byte(line), &r)
			relayouts = append(relayouts, r)
			last := 0
			if len(steps) > 0 {
				last = steps[len(steps)-1].Step
			}
			before = append(before, last)
		}
	}
	return steps, relayouts, before
}

// elasticArgs is the training job of the elastic tests, with its layout
// flags: with dp2 every layout's global batch is 4 micro-batches, and one
// process with 4 gives the same bits.
func elasticArgs(steps int, layout ...string) []string {
	return append(append(append([]string{}, tinyModel...), "--steps", fmt.Sprint(steps), "--checkpoint-every", "4"), layout...)
}

var dp2 = []string{"--dp", "2", "--microbatches", "2"}

// TestTrainElasticNodeLoss: three simulated hosts with --nnodes 2:3; rank 0
// holds before step 10 until the host of node 2 has had its agent killed.
// The job goes on with two hosts, the global batch kept, ends with exit 0,
// logs the re-layout and records it in --metrics; its final checkpoint
// equals, bit for bit, a fixed two-host run of that layout resumed from a
// copy of the re-layout's starting point, and one process's. With dp 2 every
// stage still has a holder after the loss: the ranks left save step 9 from
// memory and no step is lost. With dp 1 the lost node's stages have none:
// the world goes on from the checkpoint of step 8. Over etcd (--rdzv-backend
// etcd, a real etcd on the machine's side of the hosts' network), the loss
// is seen by node 2's member lease lapsing instead of by the heartbeat, and
// the rest is the same.
func TestTrainElasticNodeLoss(t *testing.T) {
	n := netns.New(t, "els1", "els2", "els3") // skips without root, saying why
	fromMemory := lossCase{name: "from memory", layout: dp2, relayout: "pp 3 dp 2 → pp 2 dp 2 (global batch 4 micro-batches), from checkpoint step 9",
		from: ranks.Shape{PP: 3, DP: 2, Micro: 2}, to: ranks.Shape{PP: 2, DP: 2, Micro: 2}, resume: 9,
		refLayout: []string{"--pp", "2", "--dp", "2", "--microbatches", "2"}, oneProcess: []string{"--microbatches", "4"},
		seen: "node 2 was lost: its agent sent no heartbeat"}
	overEtcd := fromMemory
	overEtcd.name, overEtcd.etcd, overEtcd.seen = "over etcd", true, "node 2 was lost: its etcd member lease lapsed"
	for i, tc := range []lossCase{
		fromMemory,
		{name: "from the checkpoint", layout: []string{"--dp", "1", "--microbatches", "2"}, relayout: "pp 6 dp 1 → pp 4 dp 1 (global batch 2 micro-batches), from checkpoint step 8",
			from: ranks.Shape{PP: 6, DP: 1, Micro: 2}, to: ranks.Shape{PP: 4, DP: 1, Micro: 2}, resume: 8,
			refLayout: []string{"--pp", "4", "--microbatches", "2"}, oneProcess: []string{"--microbatches", "2"},
			seen: "node 2 was lost: its agent sent no heartbeat"},
		overEtcd,
	} {
		t.Run(tc.name, func(t *testing.T) {
			elasticLoss(t, n, 29410+10*i, tc)
		})
	}
}

// lossCase is one case of TestTrainElasticNodeLoss.
type lossCase struct {
	name       string
	etcd       bool     // meet in etcd, not at node 0's store
	seen       string   // what node 0 logs on seeing the loss
	layout     []string // the first world's flags
	relayout   string   // the re-layout line, after the nodes
	from, to   ranks.Shape
	resume     int      // the re-layout's starting point
	refLayout  []string // the fixed two-host run's flags
	oneProcess []string // one process's
}

// elasticLoss runs c on n's hosts with the rendezvous at port (and port+1
// for the reference).
func elasticLoss(t *testing.T, n *netns.Net, port int, c lossCase) {
	layout, relayout, from, to, resume := c.layout, c.relayout, c.from, c.to, c.resume
	dir := t.TempDir()
	ckpt, metrics := filepath.Join(dir, "ckpt"), filepath.Join(dir, "metrics.jsonl")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	const steps = 16
	args := append([]string{"--metrics", metrics, "--checkpoint-dir", ckpt}, elasticArgs(steps, layout...)...)
	hold := []string{ranks.HoldEnv + "=0:9"} // before the 10th step, first round only
	agents := startElasticAgents(t, ctx, n.Hosts, elasticRdzv(t, n, port, c.etcd), fmt.Sprintf("elastic-loss-%d", port), hold, args...)
	agents[2].cmd.Process.Kill()
	lostAt := time.Now()
	agents[0].mustExitZero(t, "node 0")
	agents[1].mustExitZero(t, "node 1")
	out := agents[0].out
	i, line := out.waitFor(t, ctx, 0, "re-layout: 3 → 2 nodes (node 2 was lost), "+relayout)
	_, first := out.waitFor(t, ctx, i, fmt.Sprintf("step %d/", resume+1))
	if !strings.Contains(out.String(), c.seen) {
		t.Errorf("node 0 did not log %q on the loss:\n%s", c.seen, out.String())
	}
	stepRecs, rels, before := elasticRecords(t, metrics)
	if testing.Verbose() {
		t.Logf("node 0's output:\n%s", out.String())
	}
	if len(rels) != 1 || rels[0].Step != resume || rels[0].From != from || rels[0].To != to {
		t.Fatalf("--metrics re-layout records %+v, want one from %v to %v at step %d", rels, from, to, resume)
	}
	done := before[0] // steps finished before the loss
	if done != 9 || len(stepRecs) != steps+done-resume {
		t.Errorf("%d step records, the first world's ending at step %d: want steps 1..9, then %d..%d", len(stepRecs), done, resume+1, steps)
	}
	t.Logf("node lost to the re-layout line %v, to the first step's line %v; steps lost %d (the loss after step %d, going on from step %d)",
		line.at.Sub(lostAt).Round(time.Millisecond), first.at.Sub(lostAt).Round(time.Millisecond), done-resume, done, resume)

	// The same layout on two hosts, resumed from a copy of the starting point.
	ref := filepath.Join(dir, "ref")
	if err := os.MkdirAll(ref, 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("cp", "-r", filepath.Join(ckpt, fmt.Sprintf("step-%06d", resume)), ref).CombinedOutput(); err != nil {
		t.Fatalf("copy the checkpoint: %v\n%s", err, out)
	}
	refArgs := append([]string{"--checkpoint-dir", ref, "--resume"}, elasticArgs(steps, c.refLayout...)...)
	var refs []*elasticAgent
	for i, h := range n.Hosts[:2] {
		refs = append(refs, startElasticAgent(t, ctx, h, i, "2", tcpRdzv(fmt.Sprintf("%s:%d", n.Hosts[0].Name, port+1)), fmt.Sprintf("elastic-ref-%d", port), nil, refArgs...))
	}
	for i, a := range refs {
		a.mustExitZero(t, fmt.Sprintf("reference node %d", i))
	}
	compare(t, ckpt, ref)
	one := t.TempDir()
	oneArgs := append([]string{"--checkpoint-dir", one}, elasticArgs(steps, c.oneProcess...)...)
	mustSucceed(t, runJob(t, 1, 0, nil, oneArgs...), "one-process reference")
	compare(t, ckpt, one)
}

// TestTrainElasticJoin: three simulated hosts with --nnodes 2:3 (pp 3 × dp
// 2) lose node 2 while rank 0 holds before step 10, and go on with two (pp 2
// × dp 2) from step 9, saved from memory; rank 0 then holds before step 13
// until a fourth host's agent (node 3) has asked to join. The ranks stop at
// that step boundary with a checkpoint, the world grows back to three hosts
// (pp 3 × dp 2) from it, with no step lost, every live agent ends with exit
// 0, and the final checkpoint equals one process's with the same global
// batch, bit for bit. Over etcd, the join request and its admission go
// through etcd's keys instead of node 0's store.
func TestTrainElasticJoin(t *testing.T) {
	n := netns.New(t, "elj1", "elj2", "elj3", "elj4") // skips without root, saying why
	overBackends(t, n, 29412, func(t *testing.T, rdzv []string) { elasticJoin(t, n, rdzv) })
}

// elasticJoin runs TestTrainElasticJoin's job on n's hosts, meeting as the
// launcher flags rdzv say.
func elasticJoin(t *testing.T, n *netns.Net, rdzv []string) {
	dir := t.TempDir()
	ckpt, metrics := filepath.Join(dir, "ckpt"), filepath.Join(dir, "metrics.jsonl")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	const steps = 16
	args := append([]string{"--metrics", metrics, "--checkpoint-dir", ckpt}, elasticArgs(steps, dp2...)...)
	hold := []string{ranks.HoldEnv + "=0:9,0:12:1"} // the first world before step 10, the second before 13
	agents := startElasticAgents(t, ctx, n.Hosts[:3], rdzv, "elastic-join", hold, args...)
	out := agents[0].out
	agents[2].cmd.Process.Kill()
	i, _ := out.waitFor(t, ctx, 0, "re-layout: 3 → 2 nodes (node 2 was lost), pp 3 dp 2 → pp 2 dp 2")
	out.waitFor(t, ctx, i, "waiting for a preemption signal before step 12")
	joinAt := time.Now()
	agents[2] = startElasticAgent(t, ctx, n.Hosts[3], 3, "2:3", rdzv, "elastic-join", hold, args...)
	for i, a := range agents {
		a.mustExitZero(t, fmt.Sprintf("agent %d", i))
	}
	i, relayout := out.waitFor(t, ctx, i, "re-layout: 2 → 3 nodes (node 3 joined), pp 2 dp 2 → pp 3 dp 2 (global batch 4 micro-batches), from checkpoint step 13")
	_, first := out.waitFor(t, ctx, i, "step 14/")
	t.Logf("fourth agent started to the re-layout line %v, to the first step's line %v",
		relayout.at.Sub(joinAt).Round(time.Millisecond), first.at.Sub(joinAt).Round(time.Millisecond))
	stepRecs, rels, _ := elasticRecords(t, metrics)
	if len(rels) != 2 || rels[0].Step != 9 || rels[1].Step != 13 || rels[1].ToRanks != 6 || rels[1].Reason != "node 3 joined" {
		t.Fatalf("--metrics re-layout records %+v, want one to 4 ranks at step 9 and one to 6 ranks at step 13", rels)
	}
	var got []int
	for _, r := range stepRecs {
		got = append(got, r.Step)
	}
	// No step again after the loss (saved from memory) nor after the join.
	if want := []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("step records %v, want %v", got, want)
	}
	refDir := t.TempDir()
	refArgs := append([]string{"--checkpoint-dir", refDir}, elasticArgs(steps, "--microbatches", "4")...)
	mustSucceed(t, runJob(t, 1, 0, nil, refArgs...), "one-process reference")
	compare(t, ckpt, refDir)
}

// TestTrainElasticBelowMin: three simulated hosts with --nnodes 2:3 lose
// two of them mid-training; node 0 alone is fewer than MIN, so the job stops
// with that reason and a failing exit code instead of re-forming, whether
// the losses are seen by the heartbeat or by etcd's leases.
func TestTrainElasticBelowMin(t *testing.T) {
	n := netns.New(t, "elm1", "elm2", "elm3") // skips without root, saying why
	overBackends(t, n, 29413, func(t *testing.T, rdzv []string) { elasticBelowMin(t, n, rdzv) })
}

// elasticBelowMin runs TestTrainElasticBelowMin's job on n's hosts, meeting
// as the launcher flags rdzv say.
func elasticBelowMin(t *testing.T, n *netns.Net, rdzv []string) {
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	args := append([]string{"--checkpoint-dir", filepath.Join(dir, "ckpt")}, elasticArgs(16, dp2...)...)
	hold := []string{ranks.HoldEnv + "=0:9"}
	agents := startElasticAgents(t, ctx, n.Hosts, rdzv, "elastic-min", hold, args...)
	agents[1].cmd.Process.Kill()
	agents[2].cmd.Process.Kill()
	err := <-agents[0].done
	agents[0].done <- err
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
		t.Fatalf("node 0 alone: %v, want exit code 1\n%s", err, agents[0].out.String())
	}
	// Both in the same beat (planRound's words), or one while the world
	// re-formed without the other (awaitMembers').
	_, l := agents[0].out.waitFor(t, ctx, 0, "fewer than --nnodes 2:3 allows: stopping")
	if !strings.Contains(l.text, "1 node left (0)") {
		t.Errorf("the reason %q does not say that node 0 alone is left", l.text)
	}
	if strings.Contains(agents[0].out.String(), "re-layout:") {
		t.Errorf("node 0 re-formed a world below MIN:\n%s", agents[0].out.String())
	}
}

// TestTrainElasticEtcdJoinerLost: over etcd, a fourth host's agent asks to
// join a full world (three hosts of --nnodes 2:3) and is killed while it
// waits for a place; its member lease lapses. When node 2 is lost after
// that, the next round refuses the dead node's request rather than admit it
// and wait --rdzv-timeout for a node that will never announce: the job goes
// on with two hosts and exits 0.
func TestTrainElasticEtcdJoinerLost(t *testing.T) {
	n := netns.New(t, "elx1", "elx2", "elx3", "elx4") // skips without root, saying why
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	srv := etcdtest.Start(t, etcdtest.Options{Host: n.Gateway.String()}) // skips without etcd, saying why
	rdzv := []string{"--rdzv-backend", "etcd", "--rdzv-endpoint", srv.Endpoint}
	const id = "elastic-joiner-lost"
	args := append([]string{"--checkpoint-dir", filepath.Join(t.TempDir(), "ckpt")}, elasticArgs(16, dp2...)...)
	hold := []string{ranks.HoldEnv + "=0:9"}
	agents := startElasticAgents(t, ctx, n.Hosts[:3], rdzv, id, hold, args...)
	cli := srv.Client(t)
	joiner := startElasticAgent(t, ctx, n.Hosts[3], 3, "2:3", rdzv, id, nil, args...)
	// The third join request: nodes 1 and 2 made the first two.
	waitEtcdKey(t, ctx, cli, "/pplaunch/"+id+"/elastic/join/3", false)
	joiner.cmd.Process.Kill()
	waitEtcdKey(t, ctx, cli, "/pplaunch/"+id+"/members/3", true)
	agents[2].cmd.Process.Kill()
	agents[0].mustExitZero(t, "node 0")
	agents[1].mustExitZero(t, "node 1")
	out := agents[0].out.String()
	for _, want := range []string{"node 3's etcd lease lapsed", "re-layout: 3 → 2 nodes (node 2 was lost), pp 3 dp 2 → pp 2 dp 2"} {
		if !strings.Contains(out, want) {
			t.Errorf("node 0's output does not say %q:\n%s", want, out)
		}
	}
}

// waitEtcdKey waits, by watch, until key exists in etcd (or, gone, until it
// does not); it fails the test when ctx ends first.
func waitEtcdKey(t *testing.T, ctx context.Context, cli *gateway.Client, key string, gone bool) {
	t.Helper()
	r, err := cli.Get(ctx, key)
	if err != nil {
		t.Fatalf("etcd: read %s: %v", key, err)
	}
	if (len(r.Kvs) == 0) == gone {
		return
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	for wr := range cli.Watch(wctx, gateway.WatchRequest{Key: []byte(key), StartRevision: r.Header.Revision + 1}) {
		for _, ev := range wr.Events {
			if (ev.Type == gateway.Delete) == gone {
				return
			}
		}
	}
	t.Fatalf("etcd key %s: not there (or still there, gone %v) when the test's time ran out: %v", key, gone, ctx.Err())
}
