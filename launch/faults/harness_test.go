package faults

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/procfs"

	"github.com/pplaunch/pplaunch/contract"
)

var (
	all  = flag.Bool("all", false, "run every fault case, not only those marked fast")
	show = flag.Bool("show", false, "log every case's output, not only a failed one's")
)

// runIDEnv carries a job's unique id into every process of it (the ranks
// inherit the agent's environment), so that leftovers can be found in /proc.
const runIDEnv = "PPLAUNCH_FAULTS_RUN_ID"

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
	// slots bounds the jobs running at once on a small machine.
	slots = make(chan struct{}, 2)
)

// binEnv names a pplaunch binary to test instead of building one (another
// build, or an installed one).
const binEnv = "PPLAUNCH_FAULTS_BIN"

// binary builds bin/pplaunch once into a temporary directory (or takes the
// one binEnv names).
func binary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		if p := os.Getenv(binEnv); p != "" {
			binPath, buildErr = p, nil
			return
		}
		dir, err := os.MkdirTemp("", "pplaunch-faults")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "pplaunch")
		out, err := exec.Command("go", "build", "-o", binPath, "../../cmd/pplaunch").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build ./cmd/pplaunch: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

// node is one agent of a job as the case starts it.
type node struct {
	launcher []string // launcher flags before "train"
	train    []string // train flags
	env      []string // this process's own environment (--direct: its task's)
	program  []string // a program to run as the ranks instead of train (after "--")
}

func (n node) argv() []string {
	if n.program != nil {
		return append(append(append([]string{}, n.launcher...), "--"), n.program...)
	}
	return append(append(append([]string{}, n.launcher...), "train"), n.train...)
}

// job is a running job: its agents, their output line by line, and the
// moment of the fault.
type job struct {
	id    string
	cmds  []*exec.Cmd
	start time.Time

	mu      sync.Mutex
	outs    []strings.Builder
	changed chan struct{} // closed and replaced at every line and at the end
	ended   bool
	faultAt time.Time
	endAt   time.Time
	codes   []int
}

func newID(name string) string {
	b := make([]byte, 6)
	rand.Read(b)
	return fmt.Sprintf("faults-%s-%s", strings.ReplaceAll(name, "/", "-"), hex.EncodeToString(b))
}

// startJob starts one agent per node in dir (the test's own when "") with
// env added, all tagged with id.
func startJob(t *testing.T, id, dir string, nodes []node, env []string) *job {
	t.Helper()
	j := &job{id: id, start: time.Now(), outs: make([]strings.Builder, len(nodes)), changed: make(chan struct{}), codes: make([]int, len(nodes))}
	var wg sync.WaitGroup
	for i, n := range nodes {
		cmd := exec.Command(binary(t), n.argv()...)
		// TMPDIR: the run directory of an agent a case SIGKILLs is the test's to remove.
		cmd.Env = append(append(append(os.Environ(), env...), n.env...), runIDEnv+"="+id, "TMPDIR="+t.TempDir())
		cmd.Dir = dir
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stdout, cmd.Stderr = w, w
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		w.Close()
		j.cmds = append(j.cmds, cmd)
		wg.Add(1)
		go func() {
			defer wg.Done()
			sc := bufio.NewScanner(r)
			sc.Buffer(make([]byte, 1<<16), 1<<22)
			for sc.Scan() {
				j.mu.Lock()
				j.outs[i].WriteString(sc.Text() + "\n")
				j.notifyLocked()
				j.mu.Unlock()
			}
			r.Close()
			code := 0
			if err := cmd.Wait(); err != nil {
				code = -1
				if ee, ok := err.(*exec.ExitError); ok {
					code = ee.ExitCode()
				}
			}
			j.mu.Lock()
			j.codes[i] = code
			j.mu.Unlock()
		}()
	}
	go func() {
		wg.Wait()
		j.mu.Lock()
		j.ended, j.endAt = true, time.Now()
		j.notifyLocked()
		j.mu.Unlock()
	}()
	return j
}

func (j *job) notifyLocked() {
	close(j.changed)
	j.changed = make(chan struct{})
}

// output is every node's output so far, node 0's first.
func (j *job) output() string {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.outputLocked()
}

func (j *job) outputLocked() string {
	var b strings.Builder
	for i := range j.outs {
		if len(j.outs) > 1 {
			fmt.Fprintf(&b, "--- node %d\n", i)
		}
		b.WriteString(j.outs[i].String())
	}
	return b.String()
}

// waitLine waits until a line holding sub appears (true) or the job ends
// without one (false).
func (j *job) waitLine(sub string) bool {
	for {
		j.mu.Lock()
		for i := range j.outs {
			if strings.Contains(j.outs[i].String(), sub) {
				j.mu.Unlock()
				return true
			}
		}
		ended, ch := j.ended, j.changed
		j.mu.Unlock()
		if ended {
			return false
		}
		<-ch
	}
}

// fault records that the fault happens now; the stop bound is measured from here.
func (j *job) fault() {
	j.mu.Lock()
	if j.faultAt.IsZero() {
		j.faultAt = time.Now()
	}
	j.mu.Unlock()
}

// wait waits for every agent to exit, killing the job after limit.
func (j *job) wait(t *testing.T, limit time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	for {
		j.mu.Lock()
		ended, ch := j.ended, j.changed
		j.mu.Unlock()
		if ended {
			return
		}
		select {
		case <-ch:
		case <-ctx.Done():
			// A hung agent's goroutines (Go's SIGQUIT dump) say where it hangs.
			var states []string
			for _, cmd := range j.cmds {
				states = append(states, fmt.Sprintf("agent %d: state %s", cmd.Process.Pid, procState(cmd.Process.Pid)))
				cmd.Process.Signal(syscall.SIGCONT)
				cmd.Process.Signal(syscall.SIGQUIT)
			}
			j.waitFor(5*time.Second, func() bool { return false })
			left := killJob(j.id)
			t.Fatalf("job still running after %v (%s; killed pids %v):\n%s", limit, strings.Join(states, ", "), left, j.output())
		}
	}
}

// jobProcs lists the processes whose environment carries the job's id.
func jobProcs(id string) []procfs.Proc {
	procs, err := procfs.AllProcs()
	if err != nil {
		return nil
	}
	var out []procfs.Proc
	for _, p := range procs {
		env, err := p.Environ()
		if err != nil {
			continue
		}
		for _, e := range env {
			if e == runIDEnv+"="+id {
				out = append(out, p)
				break
			}
		}
	}
	return out
}

// leftovers waits a bounded while for the job's processes to go and returns
// those still there. After the agents exited normally there are none; after
// an agent was SIGKILLed its keepers kill what remains of their ranks as they
// see its end of their sockets close, which takes them a moment.
func leftovers(id string, bound time.Duration) []int {
	deadline := time.Now().Add(bound)
	for {
		procs := jobProcs(id)
		if len(procs) == 0 || time.Now().After(deadline) {
			var pids []int
			for _, p := range procs {
				pids = append(pids, p.PID)
			}
			return pids
		}
		time.Sleep(10 * time.Millisecond) // polling /proc: nothing to wait on
	}
}

// killJob SIGKILLs every process of the job (cleanup) and returns their pids.
func killJob(id string) []int {
	var pids []int
	for _, p := range jobProcs(id) {
		syscall.Kill(p.PID, syscall.SIGKILL)
		syscall.Kill(p.PID, syscall.SIGCONT)
		pids = append(pids, p.PID)
	}
	return pids
}

// keeperEnv marks the keeper pplaunch runs each rank under (launch/keeper.go:
// the agent's own executable, re-executed): it carries the rank's whole
// environment too, and strips this variable before it starts the rank.
const keeperEnv = "PPLAUNCH_KEEPER=1"

// rankPID waits for the process of the given rank of the job (a child of
// one of the agents, which keeps its ranks itself where it makes a cgroup
// for the job, or of an agent's keeper) and returns its pid, or 0 when the
// job ends first. A signal to a keeper would not reach the rank: the rank
// runs in its own process group, and a stopped keeper only stops reaping.
func (j *job) rankPID(rank int) int {
	want := contract.EnvRank + "=" + strconv.Itoa(rank)
	role := contract.EnvRole + "=" + contract.RoleRank
	for {
		for _, cmd := range j.cmds {
			kids := children(cmd.Process.Pid)
			for _, kid := range kids {
				kids = append(kids, children(kid)...)
			}
			for _, pid := range kids {
				p, err := procfs.NewProc(pid)
				if err != nil {
					continue
				}
				env, _ := p.Environ()
				if slices.Contains(env, want) && slices.Contains(env, role) && !slices.Contains(env, keeperEnv) {
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

// children lists the child processes of pid (of all its threads).
func children(pid int) []int {
	tasks, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	var out []int
	for _, task := range tasks {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/children", pid, task.Name()))
		if err != nil {
			continue
		}
		for _, f := range strings.Fields(string(b)) {
			if c, err := strconv.Atoi(f); err == nil {
				out = append(out, c)
			}
		}
	}
	return out
}

// freePort is a loopback TCP port free at the time of the call.
func freePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
}

// runPlain runs a job with no fault into ckpt and returns its exit code and
// output (for references, preparation and resumes).
func runPlain(t *testing.T, name string, nproc int, train []string) (int, string) {
	t.Helper()
	slots <- struct{}{}
	defer func() { <-slots }()
	id := newID(name)
	j := startJob(t, id, "", []node{{launcher: []string{"--nproc", strconv.Itoa(nproc), "--standalone", "--grace-period", "5s"}, train: train}}, nil)
	j.wait(t, 5*time.Minute)
	if left := killJob(id); len(left) > 0 {
		t.Errorf("%s: processes of the job left after it ended: %v", name, left)
	}
	return j.codes[0], j.output()
}

func (j *job) hasEnded() bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.ended
}

// describe names each pid's command line, for an error about leftovers.
func describe(pids []int) string {
	var out []string
	for _, pid := range pids {
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		out = append(out, fmt.Sprintf("%d: %s", pid, strings.TrimSpace(strings.ReplaceAll(string(b), "\x00", " "))))
	}
	return strings.Join(out, "; ")
}

// procState is the state letter of pid in /proc ("T": stopped), "" when gone.
func procState(pid int) string {
	p, err := procfs.NewProc(pid)
	if err != nil {
		return ""
	}
	st, err := p.Stat()
	if err != nil {
		return ""
	}
	return st.State
}

// listeners are the IPv4 TCP addresses pid listens on: its sockets' inodes
// (/proc/PID/fd) looked up among the listening sockets of /proc/PID/net/tcp.
func listeners(pid int) []string {
	fds, _ := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	inodes := map[string]bool{}
	for _, fd := range fds {
		tg, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, fd.Name()))
		if ino, ok := strings.CutPrefix(tg, "socket:["); ok && err == nil {
			inodes[strings.TrimSuffix(ino, "]")] = true
		}
	}
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/net/tcp", pid))
	var out []string
	for _, line := range strings.Split(string(b), "\n")[1:] {
		// sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
		f := strings.Fields(line)
		if len(f) < 10 || f[3] != "0A" || !inodes[f[9]] { // 0A: TCP_LISTEN
			continue
		}
		hexIP, hexPort, _ := strings.Cut(f[1], ":")
		ip, err1 := strconv.ParseUint(hexIP, 16, 32)
		port, err2 := strconv.ParseUint(hexPort, 16, 16)
		if err1 != nil || err2 != nil {
			continue
		}
		addr := net.IPv4(byte(ip), byte(ip>>8), byte(ip>>16), byte(ip>>24)) // little endian
		if addr.IsUnspecified() {
			addr = net.IPv4(127, 0, 0, 1)
		}
		out = append(out, net.JoinHostPort(addr.String(), strconv.FormatUint(port, 10)))
	}
	return out
}

// waitFor polls cond (reading /proc: nothing to wait on) until it holds
// (true) or the job ends or bound passes (false).
func (j *job) waitFor(bound time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(bound)
	for !cond() {
		if j.hasEnded() || time.Now().After(deadline) {
			return false
		}
		time.Sleep(time.Millisecond)
	}
	return true
}

// vm reads a field of /proc/PID/status in bytes ("VmRSS", "VmHWM").
func vm(pid int, field string) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			var kb int64
			if _, err := fmt.Sscanf(strings.TrimSpace(v), "%d kB", &kb); err != nil {
				return 0, fmt.Errorf("%s %q: %v", field, v, err)
			}
			return kb << 10, nil
		}
	}
	return 0, fmt.Errorf("no %s in /proc/%d/status", field, pid)
}
