package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/pplaunch/pplaunch/ranks"
	"github.com/pplaunch/pplaunch/store/etcdstore/etcdtest"
	"github.com/pplaunch/pplaunch/store/etcdstore/gateway"
)

// trainTwoAgents runs `train` as two agents, real processes on loopback,
// each with rendezvous(node)'s launcher flags, and returns node 0's output
// and the metrics of the run.
func trainTwoAgents(t *testing.T, rendezvous func(node int) []string, ckpt string, args ...string) (string, jobResult) {
	t.Helper()
	bin := binary(t)
	jobs <- struct{}{}
	defer func() { <-jobs }()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	metrics := filepath.Join(t.TempDir(), "metrics.jsonl")
	outs := make([][]byte, 2)
	errs := make([]error, 2)
	var wg sync.WaitGroup
	for n := range 2 {
		argv := append(append([]string{"--nnodes", "2", "--node-rank", strconv.Itoa(n), "--nproc", "2", "--rdzv-timeout", "60s"}, rendezvous(n)...),
			append([]string{"train", "--metrics", metrics, "--checkpoint-dir", ckpt}, args...)...)
		cmd := exec.CommandContext(ctx, bin, argv...)
		cmd.Env = append(os.Environ(), "PPLAUNCH_TOKEN=two-agents-secret")
		wg.Go(func() { outs[n], errs[n] = cmd.CombinedOutput() })
	}
	wg.Wait()
	for n := range 2 {
		if errs[n] != nil {
			t.Fatalf("agent of node %d: %v\n%s", n, errs[n], outs[n])
		}
	}
	return string(outs[0]), jobResult{metrics: readSteps(t, metrics)}
}

// TestTrainEtcdEqualsTCPStore: a pp=4 job on two agents that meet in a
// real etcd trains to the bits of the same job meeting at node 0's store.
func TestTrainEtcdEqualsTCPStore(t *testing.T) {
	srv := etcdtest.Start(t, etcdtest.Options{})
	args := append([]string{"--microbatches", "4"}, tinyModel...)
	port := freePort(t)
	tcpDir, etcdDir := t.TempDir(), t.TempDir()
	_, tcp := trainTwoAgents(t, func(int) []string {
		return []string{"--rdzv-endpoint", "127.0.0.1:" + port, "--rdzv-id", "tcp-store"}
	}, tcpDir, args...)
	out, etcd := trainTwoAgents(t, func(int) []string {
		return []string{"--rdzv-backend", "etcd", "--rdzv-endpoint", srv.Endpoint, "--master-addr", "127.0.0.1", "--rdzv-id", "etcd-store"}
	}, etcdDir, args...)
	if !strings.Contains(out, "joined a world of 4 ranks on 2 nodes") || !strings.Contains(out, "4 ranks = pp 4 × dp 1") {
		t.Errorf("node 0's output does not show a 4-rank world on 2 nodes:\n%s", out)
	}
	compare(t, etcdDir, tcpDir)
	if len(losses(etcd)) != 2 || fmt.Sprint(losses(etcd)) != fmt.Sprint(losses(tcp)) {
		t.Errorf("losses %v through etcd, %v through the TCP store", losses(etcd), losses(tcp))
	}
}

// startEtcdAgents starts `train --steps steps` as two agents of run id
// meeting in srv, one rank each, with launcher flags extra; it returns the
// agents (killed at the test's end), their stderr and node 0's stdout lines.
func startEtcdAgents(t *testing.T, srv *etcdtest.Server, id string, extra []string, steps string) ([]*exec.Cmd, *[2]bytes.Buffer, <-chan string) {
	t.Helper()
	exe := binary(t)
	cmds := make([]*exec.Cmd, 2)
	var errs [2]bytes.Buffer
	for n := range 2 {
		args := append(append([]string{"--nnodes", "2", "--node-rank", strconv.Itoa(n), "--rdzv-backend", "etcd", "--rdzv-endpoint", srv.Endpoint,
			"--master-addr", "127.0.0.1", "--rdzv-id", id, "--nproc", "1"}, extra...), "train")
		cmds[n] = exec.Command(exe, append(append(args, tinyModel...), "--steps", steps)...)
		cmds[n].Env = append(os.Environ(), "PPLAUNCH_TOKEN="+id+"-secret")
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
		t.Cleanup(func() { cmds[n].Process.Kill(); cmds[n].Wait() })
	}
	return cmds, &errs, lines(pipe, nil)
}

// TestTrainEtcdLostNode: node 1's agent is SIGKILLed mid-run; its etcd lease
// lapses, node 0 sees it by watch and names node 1 as the root cause, and
// nothing of the job is left.
func TestTrainEtcdLostNode(t *testing.T) {
	srv := etcdtest.Start(t, etcdtest.Options{})
	jobs <- struct{}{}
	defer func() { <-jobs }()
	id := fmt.Sprintf("etcd-lost-node-%d", os.Getpid())
	cmds, errs, ch := startEtcdAgents(t, srv, id, []string{"--grace-period", "2s"}, "100000")
	t.Cleanup(func() { // the killed agent's run directory, which it could not remove
		dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), "pplaunch-"+id+"-*"))
		for _, d := range dirs {
			os.RemoveAll(d)
		}
	})
	waitLine(t, ch, regexp.MustCompile(`^\[rank 0\] step 1/`))
	cmds[1].Process.Signal(syscall.SIGKILL)
	cmds[1].Wait()
	for range ch {
	}
	code := exitCode(t, cmds[0].Wait())
	e := errs[0].String()
	if code == 0 || !strings.Contains(e, "node 1's etcd lease lapsed") || !strings.Contains(e, "root cause: node 1 was lost") {
		t.Fatalf("node 0: exit %d, want node 1's lapsed lease seen and node 1 the root cause; stderr:\n%s", code, e)
	}
	if left := jobPids(t, id); len(left) > 0 {
		t.Errorf("processes of the job left: %v", left)
	}
}

// TestEtcdMisconfigured: an endpoint where no etcd runs, a TLS file that is
// not there and a wrong password each end the agent with an error that says
// what is wrong and which flag fixes it.
func TestEtcdMisconfigured(t *testing.T) {
	srv := etcdtest.Start(t, etcdtest.Options{})
	srv.EnableAuth(t, "rootpw", "trainer", "s3cret")
	exe := binary(t)
	missing := filepath.Join(t.TempDir(), "ca.pem")
	for _, tc := range []struct {
		name  string
		flags []string
		env   string
		code  int
		want  []string
	}{
		{"no etcd there", []string{"--rdzv-endpoint", "127.0.0.1:1"}, "", 1,
			[]string{"etcd at 127.0.0.1:1: not reachable within 3s", "check --rdzv-endpoint"}},
		{"missing CA file", []string{"--rdzv-endpoint", srv.Endpoint, "--rdzv-conf", "cacert=" + missing}, "", 1,
			[]string{"--rdzv-conf cacert=" + missing, "no such file"}},
		{"wrong password", []string{"--rdzv-endpoint", srv.Endpoint, "--rdzv-conf", "user=trainer"}, "PPLAUNCH_RDZV_PASSWORD=wrong", 1,
			[]string{`refused user "trainer"`, "check --rdzv-conf user= and password="}},
		{"no user", []string{"--rdzv-endpoint", srv.Endpoint}, "", 1,
			[]string{"authentication enabled", "give --rdzv-conf user=NAME"}},
		{"user without password", []string{"--rdzv-endpoint", srv.Endpoint, "--rdzv-conf", "user=trainer"}, "", 2,
			[]string{"no password: give password= or export PPLAUNCH_RDZV_PASSWORD"}},
	} {
		argv := append([]string{"--nnodes", "2", "--node-rank", "1", "--rdzv-backend", "etcd", "--rdzv-id", "misconfigured",
			"--rdzv-timeout", "3s"}, tc.flags...)
		cmd := exec.Command(exe, append(argv, "--", "true")...)
		cmd.Env = append(os.Environ(), "PPLAUNCH_TOKEN=secret", tc.env)
		out, err := cmd.CombinedOutput()
		code := exitCode(t, err)
		for _, w := range tc.want {
			if code != tc.code || !strings.Contains(string(out), w) {
				t.Errorf("%s: exit %d (want %d), output:\n%s\nwant it to say %q", tc.name, code, tc.code, out, w)
			}
		}
	}
}

// readSteps reads the step records of a --metrics file.
func readSteps(t *testing.T, path string) []ranks.StepRecord {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []ranks.StepRecord
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var r ranks.StepRecord
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("%s: line %q: %v", path, line, err)
		}
		if r.Record == ranks.RecordStep {
			out = append(out, r)
		}
	}
	return out
}

// TestTrainEtcdCtrlZ: Ctrl-Z to node 1's agent suspends the job through
// etcd; node 1 stays stopped until its member lease lapsed (which must not
// read as a loss), and after fg both nodes train to the end.
func TestTrainEtcdCtrlZ(t *testing.T) {
	srv := etcdtest.Start(t, etcdtest.Options{})
	jobs <- struct{}{}
	defer func() { <-jobs }()
	id := fmt.Sprintf("etcd-ctrl-z-%d", os.Getpid())
	cmds, errs, ch := startEtcdAgents(t, srv, id, nil, "40")
	waitLine(t, ch, regexp.MustCompile(`^\[rank 0\] step 2/`))
	agent := cmds[1].Process.Pid
	cmds[1].Process.Signal(syscall.SIGTSTP)
	for deadline := time.Now().Add(30 * time.Second); processState(agent) != "T"; {
		if time.Now().After(deadline) {
			t.Fatalf("node 1's agent did not stop on SIGTSTP (state %q); stderr:\n%s", processState(agent), errs[1].String())
		}
		time.Sleep(10 * time.Millisecond) // polling /proc: nothing to wait on
	}
	// The scenario: stopped until its member lease lapsed.
	cli := srv.Client(t)
	member := "/pplaunch/" + id + "/members/1"
	wctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	r, err := cli.Get(wctx, member)
	lapsed := err == nil && len(r.Kvs) == 0 // gone already
	if !lapsed {
		var from int64 // the changes after the revision read (0: after now)
		if err == nil {
			from = r.Header.Revision + 1
		}
		for wr := range cli.Watch(wctx, gateway.WatchRequest{Key: []byte(member), StartRevision: from}) {
			if wr.Err != nil {
				break
			}
			if len(wr.Events) > 0 && wr.Events[0].Type == gateway.Delete {
				lapsed = true
				break
			}
		}
	}
	cancel()
	cmds[1].Process.Signal(syscall.SIGCONT)
	if !lapsed {
		t.Fatalf("node 1's member key %s did not lapse within 30s while its agent was stopped", member)
	}
	for range ch {
	}
	codes := []int{exitCode(t, cmds[0].Wait()), exitCode(t, cmds[1].Wait())}
	e := errs[0].String()
	if codes[0] != 0 || codes[1] != 0 || !strings.Contains(e, "node 1 suspended (job control)") || strings.Contains(e, "was lost") {
		t.Fatalf("exit codes %v, want 0 and node 1 seen suspended, not lost; node 0's stderr:\n%s\nnode 1's:\n%s", codes, e, errs[1].String())
	}
}

// processState is the state letter of pid in /proc ("T": stopped), "" once gone.
func processState(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return ""
	}
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) {
		return s[i+2 : i+3]
	}
	return ""
}
