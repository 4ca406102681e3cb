package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/procfs"
	"golang.org/x/sys/unix"
)

// jobPids lists the processes whose environment holds PPLAUNCH_RUN_ID=id:
// every rank, keeper and process a rank started.
func jobPids(t *testing.T, id string) []int {
	t.Helper()
	procs, err := procfs.AllProcs()
	if err != nil {
		t.Fatal(err)
	}
	var out []int
	for _, p := range procs {
		env, err := p.Environ()
		if err != nil {
			continue
		}
		for _, kv := range env {
			if kv == "PPLAUNCH_RUN_ID="+id {
				out = append(out, p.PID)
				break
			}
		}
	}
	return out
}

// ends waits (on a pidfd, readable when the process exits) at most 30 s for pid.
func ends(pid int) bool {
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return errors.Is(err, unix.ESRCH)
	}
	defer unix.Close(fd)
	for {
		n, err := unix.Poll([]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}, 30_000)
		if err != unix.EINTR {
			return err == nil && n == 1
		}
	}
}

// lines delivers r's lines; the test waits on them (events, not time).
func lines(r io.Reader, copyTo *bytes.Buffer) <-chan string {
	ch := make(chan string, 64)
	go func() {
		defer close(ch)
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			if copyTo != nil {
				copyTo.WriteString(sc.Text() + "\n")
			}
			ch <- sc.Text()
		}
	}()
	return ch
}

// waitLine waits for a line matching re and returns its submatches.
func waitLine(t *testing.T, ch <-chan string, re *regexp.Regexp) []string {
	t.Helper()
	deadline := time.After(60 * time.Second) // guards against a hang only
	for {
		select {
		case l, ok := <-ch:
			if !ok {
				t.Fatalf("output ended before a line matching %s", re)
			}
			if m := re.FindStringSubmatch(l); m != nil {
				return m
			}
		case <-deadline:
			t.Fatalf("no line matching %s", re)
		}
	}
}

// TestAgentKilledLeavesNothing: the agent is SIGKILLed while each rank has a
// background child of its own; afterwards no process of the job remains.
func TestAgentKilledLeavesNothing(t *testing.T) {
	id := fmt.Sprintf("killed-agent-%d", os.Getpid())
	// TMPDIR: the killed agent leaves its run directory to the test.
	cmd := pplaunch(t, []string{"TMPDIR=" + t.TempDir()}, "--nproc", "2", "--rdzv-id", id, "--", "/bin/sh", "-c", `sleep 1000 & echo "child $!"; wait`)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { // a failed test leaves nothing either
		cmd.Process.Kill()
		for _, pid := range jobPids(t, id) {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	ch := lines(out, nil)
	re := regexp.MustCompile(`^\[rank \d\] child (\d+)$`)
	waitLine(t, ch, re)
	waitLine(t, ch, re)
	pids := jobPids(t, id)
	if len(pids) < 4 { // 2 ranks, 2 children (and their keepers)
		t.Fatalf("found %d processes of the job (%v), want at least 4", len(pids), pids)
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	for _, pid := range pids {
		if !ends(pid) {
			t.Errorf("process %d of the job still runs after the agent was killed", pid)
		}
	}
	if left := jobPids(t, id); len(left) > 0 {
		t.Errorf("processes of the job left: %v", left)
	}
}

func procState(pid int) string {
	p, err := procfs.NewProc(pid)
	if err != nil {
		return "gone"
	}
	st, err := p.Stat()
	if err != nil {
		return "gone"
	}
	return st.State
}

// TestCtrlZSuspendsTheJob: SIGTSTP to the agent stops its ranks, then the
// agent; SIGCONT resumes them all.
func TestCtrlZSuspendsTheJob(t *testing.T) {
	dir := t.TempDir()
	for r := range 2 {
		if err := syscall.Mkfifo(filepath.Join(dir, fmt.Sprintf("fifo.%d", r)), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	cmd := pplaunch(t, []string{"FIFODIR=" + dir}, "--nproc", "2", "--", "/bin/sh", "-c",
		`echo "pid $$"; read line <"$FIFODIR/fifo.$RANK"; echo "resumed $line"`)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // job control as under a shell
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var errb bytes.Buffer
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	ch := lines(out, nil)
	re := regexp.MustCompile(`^\[rank \d\] pid (\d+)$`)
	var pids []int
	for range 2 {
		pid, _ := strconv.Atoi(waitLine(t, ch, re)[1])
		pids = append(pids, pid)
	}
	cmd.Process.Signal(syscall.SIGTSTP)
	var ws unix.WaitStatus
	if _, err := unix.Wait4(cmd.Process.Pid, &ws, unix.WUNTRACED, nil); err != nil || !ws.Stopped() {
		t.Fatalf("agent did not stop on SIGTSTP: %v, status %v; stderr:\n%s", err, ws, errb.String())
	}
	for _, pid := range pids {
		if st := procState(pid); st != "T" {
			t.Errorf("rank pid %d is in state %s with the agent suspended, want T (stopped)", pid, st)
		}
	}
	cmd.Process.Signal(syscall.SIGCONT)
	if _, err := unix.Wait4(cmd.Process.Pid, &ws, unix.WCONTINUED, nil); err != nil || !ws.Continued() {
		t.Fatalf("agent did not continue: %v, status %v", err, ws)
	}
	for r := range 2 {
		f, err := os.OpenFile(filepath.Join(dir, fmt.Sprintf("fifo.%d", r)), os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(f, "rank%d\n", r)
		f.Close()
	}
	waitLine(t, ch, regexp.MustCompile(`resumed rank[01]$`))
	waitLine(t, ch, regexp.MustCompile(`resumed rank[01]$`))
	if code := exitCode(t, cmd.Wait()); code != 0 {
		t.Fatalf("exit %d after resuming; stderr:\n%s", code, errb.String())
	}
}
