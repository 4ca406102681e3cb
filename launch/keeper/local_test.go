package keeper

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// localAgentEnv set to 1 makes this test binary an agent that keeps one rank
// itself and waits to be killed (TestGuardianKillsTheJobOfAKilledAgent).
const localAgentEnv = "PPLAUNCH_TEST_LOCAL_AGENT"

func init() {
	if os.Getenv(localAgentEnv) == "1" {
		os.Exit(localAgent())
	}
}

// localAgent starts a rank that leaves a process in a session of its own,
// prints "ready CGROUP RANK-PID GUARDIAN-PID", and waits.
func localAgent() int {
	l, err := NewLocal("")
	if err != nil {
		fmt.Println("no cgroup:", err)
		return 2
	}
	null, _ := os.Open(os.DevNull)
	s := Start{Local: 0, Path: "/bin/sh", Argv: []string{"sh", "-c", `setsid sleep 600 & echo "left $!"; exec sleep 600`},
		Env: []string{"PATH=" + os.Getenv("PATH"), "LOCAL_RANK=0"}}
	if err := l.Start(s, null, os.Stdout, os.Stderr); err != nil {
		fmt.Println(err)
		return 1
	}
	e := <-l.Events
	fmt.Println("ready", l.Dir, e.Pid, l.guard.pid)
	select {}
}

// newLocal is the agent's own keeper for a test, or skips it where this
// machine lets the test make no cgroup.
func newLocal(t *testing.T) *Local {
	t.Helper()
	l, err := NewLocal("")
	if err != nil {
		t.Skipf("the agent keeps its ranks itself only in a cgroup it makes: %v", err)
	}
	t.Cleanup(func() {
		l.Done()
		for range l.Events {
		}
	})
	return l
}

// startLocal starts a rank running script under l, and returns its stdout.
func startLocal(t *testing.T, l *Local, local int, script string) *bufio.Reader {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	t.Cleanup(func() { r.Close() })
	null, _ := os.Open(os.DevNull)
	defer null.Close()
	s := Start{Local: local, Path: "/bin/sh", Argv: []string{"sh", "-c", script},
		Env: []string{"PATH=" + os.Getenv("PATH"), "LOCAL_RANK=" + strconv.Itoa(local)}}
	if err := l.Start(s, null, w, w); err != nil {
		t.Fatal(err)
	}
	return bufio.NewReader(r)
}

// The agent's own keeper: ranks are the agent's children, in the job's
// cgroup; what a rank leaves (in its group, in a session of its own) is
// killed when it ends while another rank runs on; Done kills that one, and
// the cgroup and the guardian are gone once Events closes.
func TestLocalKillsWhatRanksLeave(t *testing.T) {
	l := newLocal(t)
	if comm, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", l.guard.pid)); err != nil || strings.TrimSpace(string(comm)) != GuardianName {
		t.Errorf("the guardian (pid %d) is called %q (%v), want %q", l.guard.pid, comm, err, GuardianName)
	}
	out := startLocal(t, l, 0, `sleep 600 & echo $!; setsid sleep 600 & echo $!; exit 3`)
	startLocal(t, l, 1, `exec sleep 600`)
	pids := map[int]int{}
	for range 3 {
		switch e := <-l.Events; e.Kind {
		case Started:
			pids[e.Local] = e.Pid
		case Exited:
			if e.Local != 0 || e.Code != 3 || e.Sig != 0 {
				t.Errorf("exit event %+v, want rank 0 with code 3", e)
			}
		default:
			t.Fatalf("event %+v", e)
		}
	}
	for range 2 {
		line, err := out.ReadString('\n')
		pid, err2 := strconv.Atoi(strings.TrimSpace(line))
		if err != nil || err2 != nil {
			t.Fatalf("rank 0 printed %q: %v %v", line, err, err2)
		}
		if !gone(pid) {
			t.Errorf("process %d that rank 0 left still runs after it exited", pid)
		}
	}
	cg, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pids[1]))
	if err != nil || !strings.Contains(string(cg), "/"+filepath.Base(l.Dir)+"\n") {
		t.Errorf("rank 1 (pid %d) is in %q (%v), want the job's cgroup %s", pids[1], cg, err, l.Dir)
	}
	l.Done()
	if e := <-l.Events; e.Kind != Exited || e.Local != 1 || e.Sig != int(syscall.SIGKILL) {
		t.Errorf("after Done: %+v, want rank 1 killed by SIGKILL", e)
	}
	if e, ok := <-l.Events; ok {
		t.Errorf("after the last rank's end: %+v, want Events closed", e)
	}
	if _, err := os.Stat(l.Dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the job's cgroup %s is left: %v", l.Dir, err)
	}
	if err := syscall.Kill(l.guard.pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("the guardian (pid %d) is left: %v", l.guard.pid, err)
	}
	if err := l.Start(Start{Path: "/bin/true", Argv: []string{"true"}}, os.Stdin, os.Stdout, os.Stderr); err == nil {
		t.Error("a start after Done succeeded")
	}
}

// A program that cannot start is reported, and the keeper carries on.
func TestLocalReportsAStartThatFails(t *testing.T) {
	l := newLocal(t)
	null, _ := os.Open(os.DevNull)
	defer null.Close()
	if err := l.Start(Start{Local: 0, Path: "/no/such/program", Argv: []string{"x"}}, null, null, null); err != nil {
		t.Fatal(err)
	}
	if e := <-l.Events; e.Kind != Failed || e.Local != 0 || e.Text != "fork/exec /no/such/program: no such file or directory" {
		t.Errorf("event %+v, want rank 0's start failed, naming the program", e)
	}
	startLocal(t, l, 1, `exit 0`)
	if e := <-l.Events; e.Kind != Started || e.Local != 1 {
		t.Errorf("event %+v, want rank 1 started", e)
	}
}

// An agent SIGKILLed while it keeps its ranks itself: its rank dies with it
// (PR_SET_PDEATHSIG), the guardian kills what the rank left in a session of
// its own (the job's cgroup), removes the cgroup, and exits.
func TestGuardianKillsTheJobOfAKilledAgent(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(self)
	cmd.Env = append(os.Environ(), localAgentEnv+"=1")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	var dir string
	var left, rank, guard int
	sc := bufio.NewScanner(stdout)
	for (left == 0 || rank == 0) && sc.Scan() {
		f := strings.Fields(sc.Text())
		switch {
		case len(f) == 2 && f[0] == "left":
			left, _ = strconv.Atoi(f[1])
		case len(f) == 4 && f[0] == "ready":
			dir = f[1]
			rank, _ = strconv.Atoi(f[2])
			guard, _ = strconv.Atoi(f[3])
		case len(f) > 1 && f[0] == "no":
			t.Skipf("the agent keeps its ranks itself only in a cgroup it makes: %s", sc.Text())
		default:
			t.Fatalf("the agent printed %q", sc.Text())
		}
	}
	if left == 0 || rank == 0 || guard == 0 {
		t.Fatalf("the agent ended before its rank ran (left %d, rank %d, guardian %d): %v", left, rank, guard, sc.Err())
	}
	t.Cleanup(func() { syscall.Kill(left, syscall.SIGKILL); syscall.Kill(rank, syscall.SIGKILL); Remove(dir) })
	cmd.Process.Kill()
	cmd.Wait()
	for what, pid := range map[string]int{"the rank": rank, "what the rank left": left, "the guardian": guard} {
		if !gone(pid) {
			t.Errorf("%s (pid %d) still runs after the agent was killed", what, pid)
		}
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the job's cgroup %s is left after its guardian exited: %v", dir, err)
	}
}
