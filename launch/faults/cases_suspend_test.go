package faults

import (
	"syscall"
	"testing"
	"time"
)

// The suspension cases: a job stopped (Ctrl-Z, SIGSTOP) for longer than its
// --timeout and continued carries on, since time spent stopped is not time
// waited.

// suspendTimeout is the cases' --timeout; they stay stopped suspendHold.
// The hold is the scenario, not a synchronisation: a job stopped for three
// times its timeout, whose waits would all expire at once on a clock that
// counted the stop.
const (
	suspendTimeout = 3 * time.Second
	suspendHold    = 3 * suspendTimeout
)

// ctrlZ sends SIGTSTP (Ctrl-Z) to node's agent once rank 0 printed step 2,
// waits until that agent and both ranks (one per node on two nodes: the
// other node holds its rank) are stopped, holds them stopped for hold, then
// sends SIGCONT (fg) to the agent.
func ctrlZ(node int, hold time.Duration) func(*testing.T, *env, *job) {
	return func(t *testing.T, _ *env, j *job) {
		ranks := []int{j.rankPID(0), j.rankPID(1)}
		if ranks[0] == 0 || ranks[1] == 0 || !j.waitLine("step 2/") {
			return
		}
		agent := j.cmds[node].Process.Pid
		j.cmds[node].Process.Signal(syscall.SIGTSTP)
		if !j.waitFor(30*time.Second, func() bool { return allStopped(append(ranks, agent)) }) {
			t.Errorf("after SIGTSTP: node %d's agent %s, ranks %s and %s; want all stopped (T)", node, procState(agent), procState(ranks[0]), procState(ranks[1]))
		}
		time.Sleep(hold) // the scenario: stopped this long
		j.cmds[node].Process.Signal(syscall.SIGCONT)
		j.fault() // the job runs again from here: the wait it was in must not have expired
	}
}

// stopWholeJob SIGSTOPs every process of the job at once (the agent, the
// keepers, the ranks: what `kill -STOP` of a job's processes, or a frozen
// container, does; no process can catch it), holds them for suspendHold,
// then SIGCONTs them all, the ranks first.
func stopWholeJob(t *testing.T, _ *env, j *job) {
	if j.rankPID(0) == 0 || j.rankPID(1) == 0 || !j.waitLine("step 2/") {
		return
	}
	var pids []int
	for _, p := range jobProcs(j.id) {
		pids = append(pids, p.PID)
		syscall.Kill(p.PID, syscall.SIGSTOP)
	}
	if !j.waitFor(30*time.Second, func() bool { return allStopped(pids) }) {
		t.Errorf("after SIGSTOP the job's processes %v are not all stopped", pids)
	}
	time.Sleep(suspendHold) // the scenario: stopped for longer than --timeout
	for i := len(pids) - 1; i >= 0; i-- {
		syscall.Kill(pids[i], syscall.SIGCONT)
	}
	j.fault() // the job runs again from here
}

// allStopped reports whether every one of pids is stopped (state T) or gone.
func allStopped(pids []int) bool {
	for _, pid := range pids {
		if s := procState(pid); s != "T" && s != "" {
			return false
		}
	}
	return true
}

// suspendSteps is long enough (seconds on a quiet machine, 5 ms a step)
// that the job is still training when the signal lands after step 2: at
// 100 steps a quiet machine finished before it.
const suspendSteps = 1000

var suspendCases = []fcase{
	// On two nodes, Ctrl-Z to one agent suspends the job: the other node
	// holds its rank, names the node suspended, not lost, and both carry on
	// after fg; also when the suspended node hosts the store.
	{name: "jobctl/ctrl-z-node1-of-two", nodes: 2, nproc: 1, env: token, args: steps(suspendSteps), timeout: suspendTimeout, during: ctrlZ(1, suspendHold),
		code: 0, want: []string{`node 1 suspended \(job control\): suspending this node's ranks`, `the suspended nodes resumed`, `summary: steps 1\.\.1000`},
		notWant: []string{`timeout after`, `root cause`, `was lost`}},
	{name: "jobctl/ctrl-z-node0-of-two", nodes: 2, nproc: 1, env: token, args: steps(suspendSteps), timeout: suspendTimeout, during: ctrlZ(0, suspendHold),
		code: 0, want: []string{`node 0 suspended \(job control\): suspending this node's ranks`, `the suspended nodes resumed`, `summary: steps 1\.\.1000`},
		notWant: []string{`timeout after`, `root cause`, `was lost`}},
	{name: "jobctl/ctrl-z-longer-than-timeout", args: steps(suspendSteps), timeout: suspendTimeout, during: ctrlZ(0, suspendHold), code: 0,
		want:    []string{`received SIGTSTP: suspending the ranks and this agent`, `received SIGCONT: resumed the ranks`, `summary: steps 1\.\.1000`},
		notWant: []string{`timeout after`, `root cause`}},
	{name: "jobctl/sigstop-whole-job-longer-than-timeout", args: steps(suspendSteps), timeout: suspendTimeout, during: stopWholeJob, code: 0,
		want: []string{`summary: steps 1\.\.1000`}, notWant: []string{`timeout after`, `root cause`}},
}
