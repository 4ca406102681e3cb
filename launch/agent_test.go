package launch

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// watchBuf is an output buffer a test can wait on.
type watchBuf struct {
	mu    sync.Mutex
	b     bytes.Buffer
	wrote chan struct{}
}

func newWatchBuf() *watchBuf { return &watchBuf{wrote: make(chan struct{}, 1)} }

func (w *watchBuf) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	select {
	case w.wrote <- struct{}{}:
	default:
	}
	return w.b.Write(p)
}

func (w *watchBuf) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}

// waitCount blocks until s occurs n times in the buffer (the deadline only
// guards against a hang; it is not how the test synchronises).
func (w *watchBuf) waitCount(t *testing.T, s string, n int) {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for strings.Count(w.String(), s) < n {
		select {
		case <-w.wrote:
		case <-deadline:
			t.Fatalf("waiting for %d × %q; output so far:\n%s", n, s, w.String())
		}
	}
}

func testConfig(nproc int) Config {
	return Config{NProc: nproc, NNodes: 1, StoreHost: "127.0.0.1", RunID: "test-run", Token: "tok",
		RdzvTimeout: 30 * time.Second, GracePeriod: 5 * time.Second, Tag: true,
		ShowLocal: func(int) bool { return true }, Cores: 8}
}

// shell runs script under /bin/sh as each rank.
func shell(script string, stdout, stderr *watchBuf) Program {
	return Program{Path: "/bin/sh", Args: []string{"-c", script}, Env: os.Environ(), Stdout: stdout, Stderr: stderr}
}

// runAgent runs Run in the background; signals go to sigs.
func runAgent(c Config, script string) (chan os.Signal, *watchBuf, *watchBuf, <-chan int) {
	out, errb := newWatchBuf(), newWatchBuf()
	sigs := make(chan os.Signal, 4)
	done := make(chan int, 1)
	go func() { done <- Run(context.Background(), c, shell(script, out, errb), sigs) }()
	return sigs, out, errb, done
}

func wait(t *testing.T, done <-chan int, errb *watchBuf) int {
	t.Helper()
	select {
	case code := <-done:
		return code
	case <-time.After(60 * time.Second): // guards against a hang only
		t.Fatalf("agent did not exit; stderr:\n%s", errb)
		return 0
	}
}

func TestRankEnvironment(t *testing.T) {
	c := testConfig(4)
	c.MaxRestarts = 2
	script := `echo "env $RANK $LOCAL_RANK $WORLD_SIZE $LOCAL_WORLD_SIZE $GROUP_RANK $NODE_RANK $GROUP_WORLD_SIZE $MASTER_ADDR $MASTER_PORT ` +
		`$PPLAUNCH_STORE_ADDR $PPLAUNCH_RUN_ID $PPLAUNCH_RESTART_COUNT $PPLAUNCH_MAX_RESTARTS $TORCHELASTIC_RESTART_COUNT ` +
		`$TORCHELASTIC_MAX_RESTARTS $TORCHELASTIC_RUN_ID $PPLAUNCH_TOKEN $PPLAUNCH_ROLE $GOMAXPROCS $OMP_NUM_THREADS"`
	_, out, errb, done := runAgent(c, script)
	if code := wait(t, done, errb); code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", code, errb)
	}
	re := regexp.MustCompile(`(?m)^\[rank (\d)\] env (.*)$`)
	seen := map[string]bool{}
	for _, m := range re.FindAllStringSubmatch(out.String(), -1) {
		f := strings.Fields(m[2])
		if len(f) != 20 {
			t.Fatalf("rank %s env line %q has %d fields", m[1], m[2], len(f))
		}
		if f[0] != m[1] || f[1] != m[1] {
			t.Errorf("tag [rank %s] but RANK=%s LOCAL_RANK=%s", m[1], f[0], f[1])
		}
		port, _ := strconv.Atoi(f[8])
		storeHost, storePort, _ := net.SplitHostPort(f[9])
		want := []string{f[0], f[1], "4", "4", "0", "0", "1", "127.0.0.1", f[8], f[9], "test-run", "0", "2", "0", "2", "test-run", "tok", "rank", "2", "1"}
		if strings.Join(f, " ") != strings.Join(want, " ") || port < 1 || storeHost != "127.0.0.1" || storePort == "" || storePort == f[8] {
			t.Errorf("rank %s env:\n got  %q\n want %q (MASTER_PORT a port, store on another)", m[1], f, want)
		}
		seen[m[1]] = true
	}
	if len(seen) != 4 {
		t.Fatalf("env lines from ranks %v, want 0..3; stdout:\n%s", seen, out)
	}
	if !strings.Contains(errb.String(), "peak RSS") {
		t.Errorf("no per-rank resource table in stderr:\n%s", errb)
	}
}

// pidsFromSummary returns the pid of each rank in the summary table.
func pidsFromSummary(s string) map[int]int {
	re := regexp.MustCompile(`(?m)^pplaunch: +(\d+) +(\d+) +(\d+) +`)
	pids := map[int]int{}
	for _, m := range re.FindAllStringSubmatch(s, -1) {
		r, _ := strconv.Atoi(m[1])
		p, _ := strconv.Atoi(m[3])
		pids[r] = p
	}
	return pids
}

// gone reports whether pid ends: it waits (on a pidfd, which becomes readable
// when the process exits) at most 30 s, for a process that was sent SIGKILL
// a moment ago may not have died yet.
func gone(pid int) bool {
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return errors.Is(err, unix.ESRCH)
	}
	defer unix.Close(fd)
	fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	for {
		n, err := unix.Poll(fds, 30_000)
		if err == unix.EINTR {
			continue
		}
		return err == nil && n == 1
	}
}

func TestFailFast(t *testing.T) {
	c := testConfig(4)
	// Rank 2 fails once every rank is up; the others would sleep for ever, and
	// each leaves a child of its own to show that whole process groups go.
	script := `sleep 1000 & echo "child $!"; echo up >>"$UPDIR/$RANK"; ` +
		`if [ "$RANK" = 2 ]; then while [ $(ls "$UPDIR" | wc -l) -lt 4 ]; do sleep 0.01; done; echo "boom on rank 2" >&2; exit 3; fi; wait`
	dir := t.TempDir()
	t.Setenv("UPDIR", dir)
	_, out, errb, done := runAgent(c, script)
	code := wait(t, done, errb)
	if code != 3 {
		t.Fatalf("agent exit %d, want 3; stderr:\n%s", code, errb)
	}
	e := errb.String()
	for _, want := range []string{
		"failed (restart 0 of 0): rank 2 exited with code 3",
		"root cause: rank 2 (local rank 2, node 0 on",
		"| boom on rank 2",
	} {
		if !strings.Contains(e, want) {
			t.Errorf("summary lacks %q:\n%s", want, e)
		}
	}
	if strings.Index(e, "root cause") > strings.Index(e, "ranks on node 0") {
		t.Errorf("root cause is not first:\n%s", e)
	}
	if n := strings.Count(e, "killed by SIGTERM (stopped by pplaunch)"); n != 3 {
		t.Errorf("%d ranks stopped by SIGTERM, want 3:\n%s", n, e)
	}
	pids := pidsFromSummary(e)
	if len(pids) != 4 {
		t.Fatalf("summary lists pids %v, want 4 ranks:\n%s", pids, e)
	}
	for r, pid := range pids {
		if !gone(pid) {
			t.Errorf("rank %d (pid %d) still runs", r, pid)
		}
	}
	for _, m := range regexp.MustCompile(`child (\d+)`).FindAllStringSubmatch(out.String(), -1) {
		pid, _ := strconv.Atoi(m[1])
		if !gone(pid) {
			t.Errorf("a rank's child (pid %d) still runs", pid)
		}
	}
}

func TestKilledRankExits137(t *testing.T) {
	_, _, errb, done := runAgent(testConfig(2), `if [ "$RANK" = 1 ]; then kill -9 $$; fi; exec sleep 1000`)
	if code := wait(t, done, errb); code != 137 {
		t.Fatalf("agent exit %d, want 137; stderr:\n%s", code, errb)
	}
	if !strings.Contains(errb.String(), "rank 1 killed by SIGKILL") {
		t.Fatalf("summary does not name rank 1 and SIGKILL:\n%s", errb)
	}
}

// Signals reach every rank; a stopped job takes along what its ranks started,
// even a process a rank starts when it gets the SIGTERM.
func TestSignalsReachRanks(t *testing.T) {
	script := `trap 'echo "got USR1"' USR1; trap 'sleep 1000 & echo "got TERM, child $!"; exit 0' TERM; ` +
		`while :; do sleep 1000 & echo ready; wait $!; done`
	sigs, out, errb, done := runAgent(testConfig(4), script)
	out.waitCount(t, "ready", 4)
	sigs <- syscall.SIGUSR1
	out.waitCount(t, "got USR1", 4)
	sigs <- syscall.SIGTERM
	if code := wait(t, done, errb); code != 128+int(syscall.SIGTERM) {
		t.Fatalf("agent exit %d, want 143; stderr:\n%s", code, errb)
	}
	if n := strings.Count(out.String(), "got TERM"); n != 4 {
		t.Fatalf("%d ranks got SIGTERM, want 4; stdout:\n%s", n, out)
	}
	if !strings.Contains(errb.String(), "root cause: pplaunch received SIGTERM") {
		t.Fatalf("summary does not blame the signal:\n%s", errb)
	}
	for _, m := range regexp.MustCompile(`child (\d+)`).FindAllStringSubmatch(out.String(), -1) {
		pid, _ := strconv.Atoi(m[1])
		if !gone(pid) {
			t.Errorf("a child a rank started on SIGTERM (pid %d) still runs", pid)
		}
	}
}

func TestGraceThenKill(t *testing.T) {
	c := testConfig(2)
	c.GracePeriod = 100 * time.Millisecond
	// Rank 1 ignores SIGTERM; rank 0 fails once rank 1 has said so.
	script := `if [ "$RANK" = 1 ]; then trap '' TERM; echo ignoring; while :; do sleep 1; done; fi; ` +
		`read line <"$FIFO"; exit 1`
	fifo := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("FIFO", fifo)
	_, out, errb, done := runAgent(c, script)
	out.waitCount(t, "ignoring", 1)
	f, err := os.OpenFile(fifo, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("go\n")
	f.Close()
	if code := wait(t, done, errb); code != 1 {
		t.Fatalf("agent exit %d, want 1; stderr:\n%s", code, errb)
	}
	if !strings.Contains(errb.String(), "killed by SIGKILL (stopped by pplaunch)") {
		t.Fatalf("rank 1 was not killed after the grace period:\n%s", errb)
	}
}

func TestMaxRestarts(t *testing.T) {
	t.Run("gives up", func(t *testing.T) {
		c := testConfig(2)
		c.MaxRestarts = 2
		_, out, errb, done := runAgent(c, `if [ "$RANK" = 0 ]; then echo "attempt $PPLAUNCH_RESTART_COUNT $TORCHELASTIC_RESTART_COUNT"; exit 5; fi; exec sleep 1000`)
		if code := wait(t, done, errb); code != 5 {
			t.Fatalf("agent exit %d, want 5; stderr:\n%s", code, errb)
		}
		for k := range 3 {
			want := fmt.Sprintf("attempt %d %d", k, k)
			if n := strings.Count(out.String(), want); n != 1 {
				t.Errorf("%q printed %d times, want 1", want, n)
			}
		}
		if strings.Contains(out.String(), "attempt 3") || strings.Count(errb.String(), "restarting the group") != 2 {
			t.Errorf("not exactly 2 restarts:\n%s\n%s", out, errb)
		}
	})
	t.Run("recovers", func(t *testing.T) {
		c := testConfig(2)
		c.MaxRestarts = 2
		_, out, errb, done := runAgent(c, `if [ "$PPLAUNCH_RESTART_COUNT" -lt 2 ]; then exit 4; fi; echo "done at $PPLAUNCH_RESTART_COUNT"`)
		if code := wait(t, done, errb); code != 0 {
			t.Fatalf("agent exit %d, want 0; stderr:\n%s", code, errb)
		}
		if n := strings.Count(out.String(), "done at 2"); n != 2 {
			t.Fatalf("%d ranks finished at restart 2, want 2; stdout:\n%s", n, out)
		}
	})
}

func TestLogDirAndFilters(t *testing.T) {
	dir := t.TempDir()
	c := testConfig(2)
	c.LogDir, c.Tee, c.Tag = dir, true, false
	c.ShowLocal = func(i int) bool { return i == 1 }
	_, out, errb, done := runAgent(c, `echo "out of $RANK"; echo "err of $RANK" >&2`)
	if code := wait(t, done, errb); code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", code, errb)
	}
	for r := range 2 {
		for _, stream := range []string{"stdout", "stderr"} {
			b, err := os.ReadFile(filepath.Join(dir, "test-run", fmt.Sprintf("rank.%d", r), stream))
			want := fmt.Sprintf("%s of %d\n", stream[3:], r)
			if err != nil || string(b) != want {
				t.Errorf("rank %d %s file = %q, %v; want %q", r, stream, b, err, want)
			}
		}
	}
	if got := out.String(); got != "out of 1\n" {
		t.Errorf("console stdout %q, want only local rank 1, untagged", got)
	}
}

func TestTwoNodesFormOneWorld(t *testing.T) {
	port := freeTestPort(t)
	script := `echo "world $RANK $LOCAL_RANK $WORLD_SIZE $NODE_RANK $GROUP_WORLD_SIZE $MASTER_ADDR $MASTER_PORT $PPLAUNCH_STORE_ADDR"`
	codes, outs, errs := runNodes(t, 2, 4, port, 0, script)
	ranks := map[int]string{}
	for n := range 2 {
		if codes[n] != 0 {
			t.Fatalf("node %d exit %d; stderr:\n%s", n, codes[n], errs[n])
		}
		for _, m := range regexp.MustCompile(`(?m)^\[rank \d\] world (.*)$`).FindAllStringSubmatch(outs[n].String(), -1) {
			f := strings.Fields(m[1])
			r, _ := strconv.Atoi(f[0])
			local, _ := strconv.Atoi(f[1])
			if _, dup := ranks[r]; dup {
				t.Errorf("rank %d twice", r)
			}
			ranks[r] = m[1]
			if f[2] != "8" || f[3] != strconv.Itoa(n) || f[4] != "2" || r != n*4+local || f[5] != "127.0.0.1" || f[7] != fmt.Sprintf("127.0.0.1:%d", port) {
				t.Errorf("node %d: %q", n, m[1])
			}
		}
	}
	var got []int
	for r := range ranks {
		got = append(got, r)
	}
	sort.Ints(got)
	if fmt.Sprint(got) != "[0 1 2 3 4 5 6 7]" {
		t.Fatalf("global ranks %v, want 0..7", got)
	}
	if ranks[0][len(ranks[0])-30:] != ranks[7][len(ranks[7])-30:] {
		t.Errorf("nodes disagree on the master: %q vs %q", ranks[0], ranks[7])
	}
}

func TestTwoNodesFailAndRestartTogether(t *testing.T) {
	port := freeTestPort(t)
	// Rank 5 (node 1) fails on the first attempt only; node 0's ranks would
	// wait for ever, so only the failure's spreading can end that attempt.
	script := `echo "run $RANK $PPLAUNCH_RESTART_COUNT"; touch "$UPDIR/$PPLAUNCH_RESTART_COUNT.$RANK"; if [ "$PPLAUNCH_RESTART_COUNT" = 0 ]; then ` +
		`if [ "$RANK" = 5 ]; then while [ $(ls "$UPDIR" | wc -l) -lt 8 ]; do sleep 0.01; done; exit 7; fi; exec sleep 1000; fi`
	t.Setenv("UPDIR", t.TempDir())
	codes, outs, errs := runNodes(t, 2, 4, port, 1, script)
	for n := range 2 {
		if codes[n] != 0 {
			t.Fatalf("node %d exit %d; stderr:\n%s", n, codes[n], errs[n])
		}
		for k := range 2 {
			if c := strings.Count(outs[n].String(), fmt.Sprintf(" %d\n", k)); c != 4 {
				t.Errorf("node %d ran %d ranks at restart %d, want 4:\n%s", n, c, k, outs[n])
			}
		}
		if !strings.Contains(errs[n].String(), "rank 5 exited with code 7") {
			t.Errorf("node %d summary does not name rank 5:\n%s", n, errs[n])
		}
	}
	// Without restarts, both agents exit with rank 5's code.
	codes, _, errs = runNodes(t, 2, 2, freeTestPort(t), 0, `if [ "$RANK" = 3 ]; then exit 7; fi; exec sleep 1000`)
	if codes[0] != 7 || codes[1] != 7 {
		t.Fatalf("exit codes %v, want 7 on both nodes; stderr:\n%s\n%s", codes, errs[0], errs[1])
	}
}

// runNodes runs one agent per node on loopback and waits for all.
func runNodes(t *testing.T, nnodes, nproc, port, maxRestarts int, script string) ([]int, []*watchBuf, []*watchBuf) {
	t.Helper()
	codes := make([]int, nnodes)
	outs, errs := make([]*watchBuf, nnodes), make([]*watchBuf, nnodes)
	var wg sync.WaitGroup
	for n := range nnodes {
		c := testConfig(nproc)
		c.NNodes, c.NodeRank, c.StorePort, c.MaxRestarts = nnodes, n, port, maxRestarts
		outs[n], errs[n] = newWatchBuf(), newWatchBuf()
		wg.Add(1)
		go func() {
			defer wg.Done()
			codes[n] = Run(context.Background(), c, shell(script, outs[n], errs[n]), make(chan os.Signal))
		}()
	}
	wg.Wait()
	return codes, outs, errs
}

func freeTestPort(t *testing.T) int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

func TestTwoNodesOneCannotStart(t *testing.T) {
	port := freeTestPort(t)
	codes := make([]int, 2)
	errs := []*watchBuf{newWatchBuf(), newWatchBuf()}
	var wg sync.WaitGroup
	for n := range 2 {
		c := testConfig(1)
		c.NNodes, c.NodeRank, c.StorePort = 2, n, port
		p := shell("exec sleep 1000", newWatchBuf(), errs[n])
		if n == 1 {
			p.Path = "no-such-program-pplaunch-test"
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			codes[n] = Run(context.Background(), c, p, make(chan os.Signal))
		}()
	}
	wg.Wait()
	if codes[0] != 1 || codes[1] != 1 || !strings.Contains(errs[0].String(), "node 1 could not start its ranks") {
		t.Fatalf("exit codes %v, want 1 on both; node 0 stderr:\n%s\nnode 1 stderr:\n%s", codes, errs[0], errs[1])
	}
}

func TestSignalDuringRendezvous(t *testing.T) {
	// Node 1 of 2 waits for a node 0 that never comes; SIGTERM ends the wait.
	c := testConfig(1)
	c.NNodes, c.NodeRank, c.StorePort = 2, 1, freeTestPort(t)
	sigs := make(chan os.Signal, 1)
	errb := newWatchBuf()
	done := make(chan int, 1)
	go func() { done <- Run(context.Background(), c, shell("true", newWatchBuf(), errb), sigs) }()
	sigs <- syscall.SIGTERM
	if code := wait(t, done, errb); code != 143 || !strings.Contains(errb.String(), "received SIGTERM while joining the rendezvous") {
		t.Fatalf("exit %d, stderr:\n%s", code, errb)
	}
}
