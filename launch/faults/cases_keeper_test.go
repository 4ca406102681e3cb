package faults

import (
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/procfs"
)

// The keeper cases: the process that starts and keeps a node's ranks
// (launch/keeper), where the agent makes no cgroup for the job and keeps
// them through it, is killed, before its ranks start and while they run.

// keeperHold makes the keeper stop itself (SIGSTOP) before it starts any
// rank, so that a case can kill it at that moment (with it the agent runs
// its ranks under a keeper process even where it could keep them itself).
var keeperHold = []string{"PPLAUNCH_TEST_KEEPER_HOLD=1"}

// noCgroup makes the agent run its ranks under a keeper process.
var noCgroup = []string{"PPLAUNCH_CGROUP=off"}

// keeperPID waits for node 0's keeper (the agent's child with the keeper's
// mark) and returns its pid, or 0 when the job ends first.
func (j *job) keeperPID() int {
	for {
		for _, pid := range children(j.cmds[0].Process.Pid) {
			if p, err := procfs.NewProc(pid); err == nil {
				if env, _ := p.Environ(); slices.Contains(env, keeperEnv) {
					return pid
				}
			}
		}
		if j.hasEnded() {
			return 0
		}
		time.Sleep(time.Millisecond) // polling /proc: nothing to wait on
	}
}

// killHeldKeeper SIGKILLs node 0's keeper once it has stopped itself.
func killHeldKeeper(t *testing.T, _ *env, j *job) {
	pid := j.keeperPID()
	if pid == 0 || !j.waitFor(30*time.Second, func() bool { return procState(pid) == "T" }) {
		t.Errorf("the keeper (pid %d) never stopped itself before starting the ranks", pid)
		return
	}
	syscall.Kill(pid, syscall.SIGKILL)
	j.fault()
}

// killKeeperOnce SIGKILLs node 0's keeper once every one of the lines appeared.
func killKeeperOnce(lines ...string) func(*testing.T, *env, *job) {
	return func(t *testing.T, _ *env, j *job) {
		for _, l := range lines {
			if !j.waitLine(l) {
				return
			}
		}
		if pid := j.keeperPID(); pid != 0 {
			syscall.Kill(pid, syscall.SIGKILL)
			j.fault()
		}
	}
}

var keeperCases = []fcase{
	// Killed before it started a rank: the agent says what died and how, and
	// exits with the signal's code; no rank ever ran.
	{name: "keeper/killed-at-start", fast: true, program: sh(`echo "rank $RANK ran"`), env: keeperHold, during: killHeldKeeper,
		code: 137, want: []string{`(?m)^pplaunch: the keeper of ranks 0, 1 \(pid \d+\) was killed by SIGKILL before any of them started$`},
		notWant: []string{`(?m)rank \d+ ran$`, `EOF`}},
	{name: "keeper/killed-at-start-one-rank", nproc: 1, program: sh(`echo "rank $RANK ran"`), env: keeperHold, during: killHeldKeeper,
		code: 137, want: []string{`(?m)^pplaunch: rank 0's keeper \(pid \d+\) was killed by SIGKILL before the rank started$`},
		notWant: []string{`(?m)rank \d+ ran$`}},
	// Killed while the ranks run (each with a child in its group): they die
	// with it, the agent says so, and nothing of the job is left.
	{name: "keeper/killed-mid-run", env: noCgroup, program: sh(`sleep 600 & echo "rank $RANK: child started"; wait`),
		during: killKeeperOnce("rank 0: child started", "rank 1: child started"),
		code:   137, want: []string{`pplaunch: the keeper of ranks 0, 1 \(pid \d+\) was killed by SIGKILL while they ran; they died with it`, rootCause(anyRank, "killed by SIGKILL")}},
}
