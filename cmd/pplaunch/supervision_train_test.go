package main

import (
	"bytes"
	bin "encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestTrainRootCauseIsTheFailingRank: rank 0 fails writing --metrics and
// tells the others, which then fail too; rank 0 is the root cause, with its
// own error, whichever rank the agent sees end first.
func TestTrainRootCauseIsTheFailingRank(t *testing.T) {
	for trial := range 3 {
		r := runJobWithin(t, 2*time.Minute, 3, 0, nil, append(tinyModel, "--metrics", "/dev/full")...)
		if r.code != 1 {
			t.Fatalf("trial %d: exit %d, want 1:\n%s", trial, r.code, r.out)
		}
		if !regexp.MustCompile(`root cause: rank 0 \(local rank 0, [^\n]*failed: train: --metrics: write /dev/full`).MatchString(r.out) {
			t.Fatalf("trial %d: rank 0's own error is not the root cause:\n%s", trial, r.out)
		}
	}
}

// progressPid reads the pid from a rank's progress file (ranks.Progress's
// action record: seq, length, "UNIXNANO PID TEXT").
func progressPid(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil || len(b) < 12 {
		t.Fatalf("progress file %s: %v (%d bytes)", path, err, len(b))
	}
	n := bin.LittleEndian.Uint32(b[4:])
	f := strings.Fields(string(b[8 : 8+n]))
	if len(f) < 3 {
		t.Fatalf("progress record %q", b[8:8+n])
	}
	pid, err := strconv.Atoi(f[1])
	if err != nil {
		t.Fatal(err)
	}
	return pid
}

// TestTrainStoppedRankIsNamed: rank 1 of 3 is SIGSTOPped mid-run; its peers
// time out waiting for it, and the summary names rank 1, stopped, with its
// last action, not a rank that timed out.
func TestTrainStoppedRankIsNamed(t *testing.T) {
	exe := binary(t)
	jobs <- struct{}{}
	defer func() { <-jobs }()
	tmp := t.TempDir()
	args := append([]string{"--nproc", "3", "--standalone", "--grace-period", "2s", "--rdzv-id", "sigstop", "train"}, tinyModel...)
	cmd := exec.Command(exe, append(args, "--steps", "100000", "--timeout", "3s")...)
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
	var out, errb bytes.Buffer
	cmd.Stderr = &errb
	pipe, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	ch := lines(pipe, &out)
	waitLine(t, ch, regexp.MustCompile(`^\[rank 0\] step 1/`))
	files, _ := filepath.Glob(filepath.Join(tmp, "pplaunch-sigstop-*", "rank.1.progress"))
	if len(files) != 1 {
		t.Fatalf("progress files of rank 1: %v", files)
	}
	pid := progressPid(t, files[0])
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	for range ch { // drain
	}
	code := exitCode(t, cmd.Wait())
	e := errb.String()
	if code != 1 || !regexp.MustCompile(`root cause: rank 1 \(local rank 1, [^\n]*was silent: its process was stopped[^\n]*its last action: step \d+ `).MatchString(e) {
		t.Fatalf("exit %d, want 1 and rank 1 named as the stopped, silent rank; stderr:\n%s", code, e)
	}
	if !strings.Contains(e, fmt.Sprintf("pid %d", pid)) {
		t.Errorf("the summary does not give the stopped rank's pid %d:\n%s", pid, e)
	}
}

// TestTrainLostNodeIsNamed: node 1's agent is SIGKILLed mid-run; node 0
// names the lost node as the root cause (its heartbeat stopped), not its own
// rank that saw the peer vanish, and nothing of the job is left.
func TestTrainLostNodeIsNamed(t *testing.T) {
	exe := binary(t)
	jobs <- struct{}{}
	defer func() { <-jobs }()
	port := freePort(t)
	id := fmt.Sprintf("lost-node-%d", os.Getpid())
	tmp := t.TempDir()
	cmds := make([]*exec.Cmd, 2)
	var errs [2]bytes.Buffer
	for n := range 2 {
		args := append([]string{"--nnodes", "2", "--node-rank", strconv.Itoa(n), "--rdzv-endpoint", "127.0.0.1:" + port,
			"--rdzv-id", id, "--nproc", "1", "--grace-period", "2s", "train"}, tinyModel...)
		cmds[n] = exec.Command(exe, append(args, "--steps", "100000")...)
		cmds[n].Env = append(os.Environ(), "PPLAUNCH_TOKEN=lost-node-secret", "TMPDIR="+tmp) // the killed agent's run directory is the test's
		cmds[n].Stderr = &errs[n]
	}
	pipe, err := cmds[0].StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	for n := range 2 {
		if err := cmds[n].Start(); err != nil {
			t.Fatal(err)
		}
		defer cmds[n].Process.Kill()
	}
	ch := lines(pipe, nil)
	waitLine(t, ch, regexp.MustCompile(`^\[rank 0\] step 1/`))
	cmds[1].Process.Signal(syscall.SIGKILL)
	cmds[1].Wait()
	for range ch {
	}
	code := exitCode(t, cmds[0].Wait())
	e := errs[0].String()
	if code == 0 || !strings.Contains(e, "root cause: node 1 was lost: its agent sent no heartbeat") {
		t.Fatalf("node 0: exit %d, want the lost node 1 as the root cause; stderr:\n%s", code, e)
	}
	if strings.Contains(e, "closing the store before every node left") {
		t.Errorf("node 0 waited for the lost node to leave:\n%s", e)
	}
	if left := jobPids(t, id); len(left) > 0 {
		t.Errorf("processes of the job left: %v", left)
	}
}
