package keeper

import (
	"bufio"
	"errors"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// agent is a test's side of a keeper: this test binary re-executed in the
// keeper's mode (its init), and the socket to it.
type agent struct {
	t      *testing.T
	fd     int
	proc   *os.Process
	cgroup string // the keeper's, from its ready event: removed by the cleanup of a keeper killed
}

func startKeeper(t *testing.T, env ...string) *agent {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	theirs := os.NewFile(uintptr(fds[1]), "agent")
	defer theirs.Close()
	proc, err := os.StartProcess(self, []string{"keeper"}, &os.ProcAttr{
		Env:   append(append(os.Environ(), Env+"=1"), env...),
		Files: []*os.File{nil, os.Stderr, os.Stderr, theirs},
	})
	if err != nil {
		t.Fatal(err)
	}
	a := &agent{t: t, fd: fds[0], proc: proc}
	t.Cleanup(func() {
		a.proc.Kill()
		a.proc.Wait()
		unix.Close(a.fd)
		if err := Remove(a.cgroup); err != nil {
			t.Errorf("the killed keeper's cgroup: %v", err)
		}
	})
	return a
}

// event reads the keeper's next event.
func (a *agent) event() Event {
	a.t.Helper()
	buf := make([]byte, 4096)
	n, _, _, _, err := unix.Recvmsg(a.fd, buf, nil, 0)
	if err != nil || n == 0 {
		a.t.Fatalf("the keeper's socket: %d bytes, %v", n, err)
	}
	e, err := ParseEvent(buf[:n])
	if err != nil {
		a.t.Fatal(err)
	}
	if e.Kind == Ready {
		a.cgroup = e.Text
	}
	return e
}

// start asks for one rank running script, and returns the pipe of its stdout.
func (a *agent) start(local int, script string) *bufio.Reader {
	a.t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		a.t.Fatal(err)
	}
	defer w.Close()
	a.t.Cleanup(func() { r.Close() })
	null, _ := os.Open(os.DevNull)
	defer null.Close()
	s := Start{Local: local, Path: "/bin/sh", Argv: []string{"sh", "-c", script},
		Env: []string{"PATH=" + os.Getenv("PATH"), "LOCAL_RANK=" + strconv.Itoa(local)}}
	rights := unix.UnixRights(int(null.Fd()), int(w.Fd()), int(w.Fd()))
	if err := unix.Sendmsg(a.fd, s.Encode(), rights, nil, 0); err != nil {
		a.t.Fatal(err)
	}
	return bufio.NewReader(r)
}

// gone reports whether pid ends within 30 s (waited on a pidfd: it is not
// this process's child).
func gone(pid int) bool {
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

// A rank that leaves a child in its group and one in a session of its own
// (setsid) and exits: the keeper reports the rank's end, kills both while a
// second rank runs on, and kills that one when the agent closes its end;
// then the keeper exits. With cgroups (where this machine lets the keeper
// make them) and without.
func TestKeeperKillsWhatRanksLeave(t *testing.T) {
	for _, mode := range []string{"", "off"} {
		t.Run("cgroup="+mode, func(t *testing.T) {
			a := startKeeper(t, CgroupEnv+"="+mode)
			ready := a.event()
			if ready.Kind != Ready {
				t.Fatalf("first event %+v, want ready", ready)
			}
			if mode == "off" && ready.Text != "" {
				t.Errorf("%s=off, yet the keeper made cgroup %s", CgroupEnv, ready.Text)
			}
			t.Logf("the keeper's cgroup: %q", ready.Text)
			out := a.start(0, `sleep 600 & echo $!; setsid sleep 600 & echo $!; exit 3`)
			a.start(1, `exec sleep 600`)
			pids := map[int]int{}
			for range 3 {
				e := a.event()
				switch e.Kind {
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
			var left []int
			for range 2 {
				line, err := out.ReadString('\n')
				n, err2 := strconv.Atoi(strings.TrimSpace(line))
				if err != nil || err2 != nil {
					t.Fatalf("rank 0 printed %q: %v %v", line, err, err2)
				}
				left = append(left, n)
			}
			for _, pid := range left {
				if !gone(pid) {
					t.Errorf("process %d that rank 0 left still runs after it exited", pid)
				}
			}
			if pids[1] == 0 || syscall.Kill(pids[1], 0) != nil {
				t.Fatalf("rank 1 (pid %d) should still run", pids[1])
			}
			unix.Shutdown(a.fd, unix.SHUT_WR) // the agent is done
			if e := a.event(); e.Kind != Exited || e.Local != 1 || e.Sig != int(syscall.SIGKILL) {
				t.Errorf("after the agent's end: %+v, want rank 1 killed by SIGKILL", e)
			}
			st, err := a.proc.Wait()
			if err != nil || !st.Success() {
				t.Errorf("keeper ended %v, %v; want exit 0", st, err)
			}
			if _, err := os.Stat(ready.Text); ready.Text != "" && !errors.Is(err, os.ErrNotExist) {
				t.Errorf("the keeper left its cgroup %s: %v", ready.Text, err)
			}
		})
	}
}

// A keeper killed by SIGKILL takes its ranks with it (PR_SET_PDEATHSIG).
func TestKeeperKilledTakesItsRanks(t *testing.T) {
	a := startKeeper(t)
	a.event() // ready
	a.start(0, `exec sleep 600`)
	e := a.event()
	if e.Kind != Started {
		t.Fatalf("event %+v, want started", e)
	}
	a.proc.Kill()
	a.proc.Wait()
	if !gone(e.Pid) {
		t.Errorf("rank (pid %d) still runs after its keeper was killed", e.Pid)
	}
}

// A program that cannot start is reported, and the keeper carries on.
func TestKeeperReportsAStartThatFails(t *testing.T) {
	a := startKeeper(t)
	a.event()
	s := Start{Local: 0, Path: "/no/such/program", Argv: []string{"x"}}
	null, _ := os.Open(os.DevNull)
	defer null.Close()
	fd := int(null.Fd())
	if err := unix.Sendmsg(a.fd, s.Encode(), unix.UnixRights(fd, fd, fd), nil, 0); err != nil {
		t.Fatal(err)
	}
	if e := a.event(); e.Kind != Failed || e.Local != 0 || e.Text != "fork/exec /no/such/program: no such file or directory" {
		t.Errorf("event %+v, want rank 0's start failed, naming the program", e)
	}
	// Without its three descriptors a start is refused, saying so.
	if err := unix.Sendmsg(a.fd, s.Encode(), nil, nil, 0); err != nil {
		t.Fatal(err)
	}
	if e := a.event(); e.Kind != Failed || !strings.Contains(e.Text, "0 descriptors, want 3") {
		t.Errorf("event %+v, want a refusal naming the descriptors", e)
	}
}

// Started outside an agent (no socket as fd 3), the keeper mode says so.
func TestKeeperWithoutAgent(t *testing.T) {
	self, _ := os.Executable()
	cmd := exec.Command(self)
	cmd.Env = append(os.Environ(), Env+"=1")
	out, err := cmd.CombinedOutput()
	if cmd.ProcessState == nil || cmd.ProcessState.ExitCode() != 127 || !strings.Contains(string(out), "started without its agent") {
		t.Errorf("exit %v, output %q; want 127 and the reason", err, out)
	}
}
