package faults

import (
	"regexp"
	"strings"
	"syscall"
	"testing"
)

// The supervision cases: what ranks leave behind, agents killed or
// suspended, agents that disagree, and the console.

// token is the job token the cases on several nodes export.
var token = []string{"PPLAUNCH_TOKEN=fault-suite-secret"}

// sh is a shell script as the ranks' program.
func sh(script string) []string { return []string{"sh", "-c", script} }

// background starts, in every rank, a child in the rank's process group and
// one in a session of its own (setsid: outside the group the agent
// signals, an orphan once the rank ends), then says so.
const background = `setsid sleep 600 & sleep 600 & echo "rank $RANK: background children started"`

// killAgentOnce SIGKILLs node's agent once every one of the lines appeared.
func killAgentOnce(node int, lines ...string) func(*testing.T, *env, *job) {
	return func(t *testing.T, _ *env, j *job) {
		for _, l := range lines {
			if !j.waitLine(l) {
				return
			}
		}
		j.cmds[node].Process.Signal(syscall.SIGKILL)
		j.fault()
	}
}

// longLines prints three lines of 200000 bytes from each rank: its rank
// digit repeated.
const longLines = `for i in 1 2 3; do head -c 200000 /dev/zero | tr '\0' "$RANK"; echo; done`

// wholeAndTagged: every console line is the agent's or one rank's, tagged
// once, holding only that rank's digit, and each rank's parts add up to all
// it printed.
func wholeAndTagged(t *testing.T, _ *env, out string) {
	tagged := regexp.MustCompile(`^\[rank (\d)\] (\d*)$`)
	got := map[string]int{}
	for _, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		if strings.HasPrefix(line, "pplaunch: ") {
			continue
		}
		m := tagged.FindStringSubmatch(line)
		if m == nil {
			t.Errorf("console line neither the agent's nor one rank's, tagged once: %.80q...", line)
			continue
		}
		if strings.Trim(m[2], m[1]) != "" {
			t.Errorf("rank %s's line holds another rank's bytes: %.80q...", m[1], m[2])
		}
		got[m[1]] += len(m[2])
	}
	for _, r := range []string{"0", "1"} {
		if got[r] != 3*200000 {
			t.Errorf("rank %s: %d bytes on the console, printed %d", r, got[r], 3*200000)
		}
	}
}

var supervisionCases = []fcase{
	// What a rank leaves running is killed when it ends, however it left it
	// (its own process group, or a session of its own).
	{name: "orphans/rank-background-children", fast: true, program: sh(background), code: 0,
		want: []string{`rank 1: background children started`, `rank 0: background children started`}},
	// And when the agent is SIGKILLed: its ranks' keepers see it go.
	{name: "orphans/agent-sigkill", program: sh(background + `; wait`),
		during: killAgentOnce(0, "rank 0: background children started", "rank 1: background children started"),
		code:   -1, want: []string{`rank 1: background children started`}},
	// Node 1's agent SIGKILLed mid-run: its ranks die with it (keepers), and
	// node 0 names the lost node from the missing heartbeats, within
	// seconds, not its own rank that saw its peer go, nor at --timeout.
	{name: "node/agent1-sigkill-lost", nodes: 2, nproc: 1, env: token, args: steps(300), during: killAgentOnce(1, "step 2/"),
		code: 1, want: []string{`root cause: node 1 was lost: its agent sent no heartbeat for 3s`}, notWant: []string{`root cause: rank`, `timeout after`}},
	// Ctrl-Z suspends the whole job, the ranks first; SIGCONT resumes it.
	{name: "jobctl/ctrl-z-then-sigcont", args: steps(300), during: ctrlZ(0, 0), code: 0,
		want: []string{`received SIGTSTP: suspending the ranks and this agent`, `received SIGCONT: resumed the ranks`, `summary: steps 1\.\.300`}},
	{name: "mismatch/nnodes", nodes: 2, nproc: 1, env: token, args: steps(3), launcher1: []string{"--nnodes", "3"},
		code: 1, want: []string{`--nnodes differs between agents: (node 1 has --nnodes 3, node 0 has --nnodes 2|node 0 has --nnodes 2, node 1 has --nnodes 3); give every agent the same --nnodes`}, notWant: []string{`\[rank`}},
	// Lines of 200000 bytes from two ranks at once are split, each part
	// tagged with its rank, and nothing is lost or mixed.
	{name: "output/long-lines-two-ranks", fast: true, program: sh(longLines), code: 0, check: wholeAndTagged},
	{name: "flags/nproc-negative", nproc: -1, args: steps(2), code: 2,
		want: []string{`(?m)^pplaunch: --nproc "-1": want a positive number or auto$`}, notWant: []string{`missing value`, `\[rank 0\]`}},
	// A rank's own error stops the job and is named, not the ranks that
	// relayed it.
	{name: "metrics/dev-full", args: steps(3, "--metrics", "/dev/full"), code: 1,
		want: []string{rootCause(0, "failed: .*--metrics.*/dev/full.*no space left on device")}},
}
