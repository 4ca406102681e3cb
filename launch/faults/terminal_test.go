package faults

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pplaunch/pplaunch/launch/keeper"
)

// A real Ctrl-Z in a real terminal: an interactive shell in tmux runs the
// job in the foreground with --timeout 3s; Ctrl-Z there (the terminal sends
// SIGTSTP to the foreground process group: the agent) stops the agent and
// both ranks, the shell takes the terminal back, and after 9 s stopped, `fg`
// continues the job, which finishes with exit 0 and no wait timed out.
func TestCtrlZInATerminal(t *testing.T) {
	if !*all {
		t.Skip("a fault case: run with -all (make faults)")
	}
	tmux, err := exec.LookPath("tmux")
	if err != nil {
		t.Skip("tmux is not installed: no terminal to press Ctrl-Z in")
	}
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("bash is not installed: no interactive shell with job control")
	}
	slots <- struct{}{}
	defer func() { <-slots }()
	dir := t.TempDir()
	id := newID("terminal/ctrl-z")
	sock := filepath.Join(dir, "tmux.sock")
	run := func(args ...string) {
		t.Helper()
		if out, err := exec.Command(tmux, append([]string{"-S", sock}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("tmux %v: %v\n%s", args, err, out)
		}
	}
	run("new-session", "-d", "-x", "200", "-y", "50", bash+" --norc --noprofile -i")
	defer func() {
		exec.Command(tmux, "-S", sock, "kill-server").Run()
		killJob(id)
	}()
	out, code := filepath.Join(dir, "out"), filepath.Join(dir, "code")
	args := append(append([]string{}, base...), "--timeout", suspendTimeout.String(), "--steps", "300")
	// One foreground job of a shell and the agent: a stopped job would end
	// the interactive shell's list with 128+SIGSTOP, not the agent's code.
	line := fmt.Sprintf("sh -c '%s=%s %s --nproc 2 train %s >%s 2>&1; echo $? >%s'", runIDEnv, id, binary(t), strings.Join(args, " "), out, code)
	run("send-keys", "-t", "0", line, "Enter")
	if !poll(2*time.Minute, func() bool { b, _ := os.ReadFile(out); return strings.Contains(string(b), "step 2/") }) {
		t.Fatalf("the job never reached step 2:\n%s", readFile(out))
	}
	run("send-keys", "-t", "0", "C-z")
	var procs []int
	stopped := poll(30*time.Second, func() bool {
		procs = agentAndRanks(id)
		return len(procs) == 3 && allStopped(procs)
	})
	if !stopped {
		t.Fatalf("after Ctrl-Z the agent and both ranks %v are not all stopped:\n%s", procs, readFile(out))
	}
	time.Sleep(suspendHold) // the scenario: stopped for three times --timeout
	run("send-keys", "-t", "0", "fg", "Enter")
	if !poll(3*time.Minute, func() bool { _, err := os.Stat(code); return err == nil }) {
		t.Fatalf("the job did not end after fg:\n%s", readFile(out))
	}
	got := readFile(out)
	if c := strings.TrimSpace(readFile(code)); c != "0" {
		t.Errorf("exit code %s after Ctrl-Z, 9 s stopped and fg, want 0:\n%s", c, got)
	}
	for _, bad := range []string{"timeout after", "root cause"} {
		if strings.Contains(got, bad) {
			t.Errorf("output says %q:\n%s", bad, got)
		}
	}
	if !strings.Contains(got, "summary: steps 1..300") {
		t.Errorf("the run did not finish its steps:\n%s", got)
	}
}

// agentAndRanks lists the job's agent and ranks (not the keepers, nor the
// agent's guardian, which job control does not stop).
func agentAndRanks(id string) []int {
	var pids []int
	for _, p := range jobProcs(id) {
		env, _ := p.Environ()
		if comm, _ := p.Comm(); slices.Contains(env, keeperEnv) || comm == keeper.GuardianName {
			continue
		}
		pids = append(pids, p.PID)
	}
	return pids
}

// poll polls cond (a file, /proc: nothing to wait on) until it holds or
// bound passes.
func poll(bound time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(bound)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(10 * time.Millisecond)
	}
	return true
}

func readFile(path string) string {
	b, _ := os.ReadFile(path)
	return string(b)
}
