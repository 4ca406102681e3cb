package faults

import (
	"fmt"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/pplaunch/pplaunch/models/checkpoint"
)

// The test hooks of the binary (read inside a rank).
func kill(rank, step int) []string {
	return []string{fmt.Sprintf("PPLAUNCH_TEST_KILL=%d:%d", rank, step)}
}
func stall(rank, step int, action string) []string {
	return []string{fmt.Sprintf("PPLAUNCH_TEST_STALL=%d:%d:%s", rank, step, action)}
}
func hold(rank, step int) []string {
	return []string{fmt.Sprintf("PPLAUNCH_TEST_HOLD=%d:%d", rank, step)}
}

// anyRank in rootCause: the ranks fail alike, whichever is first is named.
const anyRank = -1

// rootCause matches the agent's summary line blaming rank for what.
func rootCause(rank int, what string) string {
	r := fmt.Sprint(rank)
	if rank == anyRank {
		r = `\d+`
	}
	return fmt.Sprintf(`root cause: rank %s \([^)]*\) %s`, r, what)
}

// killed matches a summary that names rank as the root cause, killed by
// SIGKILL (the agent ranks the peers that only saw its links close below it).
func killed(rank int) string { return rootCause(rank, "killed by SIGKILL") }

func steps(n int, more ...string) []string {
	return append([]string{"--steps", fmt.Sprint(n)}, more...)
}

// killAtRendezvous SIGKILLs victim while it meets the others: holder is
// stopped (SIGSTOP) as soon as it exists, so the victim cannot get past
// connecting to it and aligning clocks with it; then the victim is killed
// and the holder continued.
func killAtRendezvous(victim, holder int) func(*testing.T, *env, *job) {
	return func(t *testing.T, _ *env, j *job) {
		h := j.rankPID(holder)
		if h == 0 {
			return
		}
		syscall.Kill(h, syscall.SIGSTOP)
		defer syscall.Kill(h, syscall.SIGCONT)
		if v := j.rankPID(victim); v != 0 {
			syscall.Kill(v, syscall.SIGKILL)
			j.fault()
		}
	}
}

// stopWhenUp SIGSTOPs rank as soon as its process exists.
func stopWhenUp(rank int) func(*testing.T, *env, *job) {
	return func(t *testing.T, _ *env, j *job) {
		if pid := j.rankPID(rank); pid != 0 {
			syscall.Kill(pid, syscall.SIGSTOP)
			j.fault()
		}
	}
}

// killDuringSave SIGKILLs rank once the checkpoint of step has begun: its
// directory holds a file (a shard being written, or written).
func killDuringSave(rank, step int) func(*testing.T, *env, *job) {
	return func(t *testing.T, e *env, j *job) {
		pid := j.rankPID(rank)
		dir := checkpoint.StepDir(e.ck, step)
		for pid != 0 {
			if entries, err := os.ReadDir(dir); err == nil && len(entries) > 0 {
				syscall.Kill(pid, syscall.SIGKILL)
				j.fault()
				return
			}
			if j.hasEnded() {
				return
			}
			time.Sleep(time.Millisecond) // polling the directory: nothing to wait on
		}
	}
}

// stopAfter SIGSTOPs rank once rank 0 has printed the line of step (1-based).
func stopAfter(rank, step int) func(*testing.T, *env, *job) {
	return func(t *testing.T, _ *env, j *job) {
		pid := j.rankPID(rank)
		if pid != 0 && j.waitLine(fmt.Sprintf("step %d/", step)) {
			syscall.Kill(pid, syscall.SIGSTOP)
			j.fault()
		}
	}
}

// signalAgent sends sig to node 0's agent once line appears.
func signalAgent(sig syscall.Signal, line string) func(*testing.T, *env, *job) {
	return func(t *testing.T, _ *env, j *job) {
		if j.waitLine(line) {
			j.cmds[0].Process.Signal(sig)
			j.fault()
		}
	}
}

var killCases = []fcase{
	{name: "kill/rank1-first-step", fast: true, args: steps(3), env: kill(1, 0), marker: "SIGKILL before step 0",
		code: 137, want: []string{killed(1)}},
	{name: "kill/rank0-mid-run", args: steps(4), env: kill(0, 2), marker: "SIGKILL before step 2",
		code: 137, want: []string{killed(0)}},
	{name: "kill/rank3-of-pp4", nproc: 4, args: steps(3), env: kill(3, 1), marker: "SIGKILL before step 1",
		code: 137, want: []string{killed(3)}},
	{name: "kill/dp-replica", nproc: 4, args: steps(3, "--dp", "2"), env: kill(2, 1), marker: "SIGKILL before step 1",
		code: 137, want: []string{killed(2)}},
	{name: "kill/restart-resumes", fast: true, nproc: 4, restarts: 1, ckpt: true, args: steps(5, "--checkpoint-every", "2"),
		env: kill(2, 3), marker: "SIGKILL before step 3", code: 0,
		want: []string{`resumed from \S*step-000002`}, keep: []int{2, 4, 5}, same: true},
	{name: "kill/rank0-restart-resumes", restarts: 1, ckpt: true, args: steps(5, "--checkpoint-every", "1"),
		env: kill(0, 3), marker: "SIGKILL before step 3", code: 0,
		want: []string{`resumed from \S*step-000003`}, keep: []int{1, 2, 3, 4, 5}, same: true},
	{name: "kill/at-rendezvous", args: steps(200), during: killAtRendezvous(1, 0),
		code: 137, want: []string{killed(1)}},
	{name: "kill/rank0-at-rendezvous", nproc: 3, args: steps(200), during: killAtRendezvous(0, 2),
		code: 137, want: []string{killed(0)}},
	{name: "kill/at-rendezvous-restart", restarts: 1, ckpt: true, args: steps(3), during: killAtRendezvous(1, 0),
		code: 0, keep: []int{3}, same: true},
	{name: "kill/during-save", ckpt: true, args: steps(6, "--checkpoint-every", "2", "--width", "128"), during: killDuringSave(1, 4),
		code: 137, want: []string{killed(1)}, keep: []int{2}},
	{name: "kill/during-save-restart", restarts: 1, ckpt: true, args: steps(6, "--checkpoint-every", "2", "--width", "128"),
		during: killDuringSave(1, 4), code: 0, keep: []int{2, 4, 6}, same: true,
		check: func(t *testing.T, e *env, _ string) { noTemps(t, e.ck) }},
	{name: "stall/rank1-forward", args: steps(3), env: stall(1, 1, "1F2"), timeout: 4 * time.Second, grace: 3 * time.Second,
		marker: "stalling before 1F2 of step 1", code: 1,
		want: []string{rootCause(1, "was silent: running, but it did not answer; its last action: step 1 1F2"), `rank 0 timed out waiting for it: step 1: \S+ \(global mb=\d+\) with rank 1: .*timeout after 4`}},
	// The stall hook fires on every attempt: the restart fails alike and the
	// agent gives up after --max-restarts.
	{name: "stall/every-attempt-gives-up", restarts: 1, args: steps(3), env: stall(1, 1, "1F2"), timeout: 3 * time.Second, grace: 2 * time.Second,
		marker: "stalling before 1F2 of step 1", code: 1,
		want: []string{`restarting the group`, `failed \(restart 1 of 1\)`, `with rank 1: .*timeout after 3`}},
	// Mid-run: the ranks have far more steps left than the signal takes to land.
	// Rank 0 then times out in whatever it waits on rank 1 for: a stage loop's
	// receive or send, or a piece of the step's all-reduce; either names rank 1.
	{name: "sigstop/rank1-mid-run", args: steps(200), during: stopAfter(1, 2), timeout: 4 * time.Second, grace: 3 * time.Second,
		code: 1, want: []string{rootCause(1, `was silent: its process was stopped \(SIGSTOP or SIGTSTP\)`), `rank 0 timed out waiting for it: .*(from|to) rank 1: timeout after 4`}},
	// Two data-parallel replicas wait on each other only in collectives (the
	// gradients' reduce-scatter and all-gather, the step's all-reduce): rank
	// 0's wait for a piece from rank 1 names rank 1 as well.
	{name: "sigstop/dp-replica-mid-run", args: steps(200, "--dp", "2"), during: stopAfter(1, 2), timeout: 4 * time.Second, grace: 3 * time.Second,
		code: 1, want: []string{rootCause(1, `was silent: its process was stopped \(SIGSTOP or SIGTSTP\)`), `rank 0 timed out waiting for it: .*(from|to) rank 1: timeout after 4`}},
	{name: "sigstop/rank1-at-start", args: steps(200), during: stopWhenUp(1), timeout: 4 * time.Second, grace: 3 * time.Second,
		code: 1, want: []string{rootCause(1, `was silent: its process was stopped \(SIGSTOP or SIGTSTP\)`)}},
	{name: "sigstop/rank1-restart", restarts: 1, ckpt: true, args: steps(60, "--checkpoint-every", "20"), during: stopAfter(1, 2),
		timeout: 4 * time.Second, grace: 3 * time.Second, code: 0, keep: []int{20, 40, 60}, same: true},
	{name: "preempt/sigterm", ckpt: true, args: steps(6), env: hold(0, 3), during: signalAgent(syscall.SIGTERM, "waiting for a preemption signal"),
		code: 143, want: []string{`stopped after step 4 of 6 on SIGTERM`}, keep: []int{4}, resume: []string{"--resume"}, same: true},
	{name: "preempt/sigusr1", fast: true, ckpt: true, args: steps(6), env: hold(0, 3), during: signalAgent(syscall.SIGUSR1, "waiting for a preemption signal"),
		code: 0, want: []string{`stopped after step 4 of 6 on SIGUSR1`}, keep: []int{4}, resume: []string{"--resume"}, same: true},
	{name: "preempt/sigint", ckpt: true, args: steps(6), env: hold(0, 3), during: signalAgent(syscall.SIGINT, "waiting for a preemption signal"),
		code: 130, want: []string{`stopped after step 4 of 6 on SIGINT`}, keep: []int{4}, resume: []string{"--resume"}, same: true},
}
