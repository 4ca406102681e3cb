package launch

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/pplaunch/pplaunch/launch/keeper"
)

// The agent starts its node's ranks through one keeper per attempt (package
// keeper: this same executable, re-executed in the keeper's mode). This is
// the agent's side: the keeper process, the socket to it, and its reports.

// keeperPath is this executable, which runs the keepers.
var keeperPath, keeperErr = os.Executable()

// keeperProc is a running keeper as the agent sees it: a keeper process, or
// the agent's own (local).
type keeperProc struct {
	proc   *os.Process       // nil for the agent's own
	local  *keeper.Local     // the agent's own keeper, or nil
	fd     int               // the agent's end of the socket (SOCK_SEQPACKET)
	events chan keeper.Event // what it reports, closed once it is gone
	status *os.ProcessState  // how it ended (set before events is closed)
	cgroup string            // its job's cgroup directory ("" none), from its Ready
}

// startKeeper starts a keeper with the agent's environment env: the agent's
// own where it can make a cgroup for the job, else a keeper process.
func startKeeper(env []string) (*keeperProc, error) {
	if keeper.InAgent(env) {
		if l, err := keeper.NewLocal(envValue(env, keeper.CgroupEnv)); err == nil {
			return localKeeper(l), nil
		}
	}
	if keeperErr != nil {
		return nil, fmt.Errorf("find this executable to run the ranks' keeper: %w", keeperErr)
	}
	pid, fd, err := keeper.Spawn(keeperPath, env)
	if err != nil {
		return nil, fmt.Errorf("start the ranks' keeper: %w", err)
	}
	return followKeeper(pid, fd)
}

// localKeeper is the agent's side of its own keeper l.
func localKeeper(l *keeper.Local) *keeperProc {
	k := &keeperProc{local: l, fd: -1, events: make(chan keeper.Event, 16), cgroup: l.Dir}
	go func() {
		for e := range l.Events {
			k.events <- e
		}
		close(k.events)
	}()
	return k
}

// envValue is the value of name in env ("" when unset).
func envValue(env []string, name string) string {
	v := ""
	for _, kv := range env {
		if s, ok := strings.CutPrefix(kv, name+"="); ok {
			v = s
		}
	}
	return v
}

// pid is the keeper's process: the agent's own when the agent keeps its ranks.
func (k *keeperProc) pid() int {
	if k.proc == nil {
		return os.Getpid()
	}
	return k.proc.Pid
}

// followKeeper is the agent's side of the keeper with pid and socket fd.
func followKeeper(pid, fd int) (*keeperProc, error) {
	proc, err := os.FindProcess(pid)
	if err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("the ranks' keeper (pid %d): %w", pid, err)
	}
	k := &keeperProc{proc: proc, fd: fd, events: make(chan keeper.Event, 16)}
	go k.read()
	return k, nil
}

// read delivers the keeper's events until its end of the socket closes, then
// waits for the keeper's exit.
func (k *keeperProc) read() {
	buf := make([]byte, 1<<16)
	for {
		n, _, _, _, err := unix.Recvmsg(k.fd, buf, nil, 0)
		if err == unix.EINTR {
			continue
		}
		if err != nil || n == 0 {
			break
		}
		e, err := keeper.ParseEvent(buf[:n])
		if err != nil {
			e = keeper.Event{Kind: keeper.Failed, Local: -1, Text: err.Error()}
		}
		if e.Kind == keeper.Ready {
			k.cgroup = e.Text
		}
		k.events <- e
	}
	k.status, _ = k.proc.Wait()
	close(k.events)
}

// start asks the keeper to start one rank with these standard streams.
func (k *keeperProc) start(s keeper.Start, stdin, stdout, stderr *os.File) error {
	if k.local != nil {
		return k.local.Start(s, stdin, stdout, stderr)
	}
	rights := unix.UnixRights(int(stdin.Fd()), int(stdout.Fd()), int(stderr.Fd()))
	msg := s.Encode()
	for {
		err := unix.Sendmsg(k.fd, msg, rights, nil, unix.MSG_NOSIGNAL)
		switch {
		case err == nil:
			return nil
		case err == unix.EINTR:
			continue
		case errors.Is(err, unix.EMSGSIZE):
			return fmt.Errorf("the rank's arguments and environment (%d bytes) are more than its keeper's socket takes", len(msg))
		default:
			return fmt.Errorf("ask the ranks' keeper (pid %d) to start it: %w", k.pid(), err)
		}
	}
}

// done tells the keeper that the attempt is over: it kills whatever is left of
// the ranks and exits. It does not wait (events closes once it exited).
func (k *keeperProc) done() {
	if k.local != nil {
		k.local.Done()
		return
	}
	unix.Shutdown(k.fd, unix.SHUT_WR)
}

// discard ends a keeper no group used, and waits for its exit.
func (k *keeperProc) discard() {
	k.done()
	for range k.events {
	}
	k.release()
}

// release closes the agent's end of the socket, once nothing sends on it.
func (k *keeperProc) release() {
	if k.fd >= 0 {
		unix.Close(k.fd)
	}
}

// keeperDied says how the keeper ended, for the ranks it held: global ranks
// started were running under it, pending had not started yet.
func keeperDied(pid int, st *os.ProcessState, started, pending []int) string {
	how := "ended"
	if st != nil {
		ws := st.Sys().(syscall.WaitStatus)
		sig := syscall.Signal(0)
		if ws.Signaled() {
			sig = ws.Signal()
		}
		how = exitHow(ws.ExitStatus(), sig, false)
	}
	all := append(append([]int{}, started...), pending...)
	held := "the keeper of ranks " + rankList(all)
	if len(all) == 1 {
		held = fmt.Sprintf("rank %d's keeper", all[0])
	}
	s := fmt.Sprintf("%s (pid %d) %s", held, pid, verb(how))
	switch {
	case len(started) == 0 && len(all) == 1:
		return s + " before the rank started"
	case len(started) == 0:
		return s + " before any of them started"
	case len(pending) > 0:
		return fmt.Sprintf("%s after %s started and before %s did; %s died with it",
			s, rankNames(started), rankList(pending), rankNames(started))
	case len(all) == 1:
		return s + " while the rank ran; the rank died with it"
	default:
		return s + " while they ran; they died with it"
	}
}

// verb turns exitHow's "killed by SIGKILL" / "exited with code 1" into the
// predicate of a sentence about the keeper.
func verb(how string) string {
	if strings.HasPrefix(how, "killed") {
		return "was " + how
	}
	return how
}

func rankNames(ranks []int) string {
	if len(ranks) == 1 {
		return fmt.Sprintf("rank %d", ranks[0])
	}
	return "ranks " + rankList(ranks)
}

// keeperCode is the agent's exit code when its keeper ended so: 128+signal,
// or the keeper's own non-zero code, else 1.
func keeperCode(st *os.ProcessState) int {
	if st == nil {
		return 1
	}
	ws := st.Sys().(syscall.WaitStatus)
	if ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	if c := ws.ExitStatus(); c > 0 {
		return c
	}
	return 1
}

// rankList writes ascending ranks compactly: "0-3", "0, 2, 5-7".
func rankList(ranks []int) string {
	var out []string
	for i := 0; i < len(ranks); {
		j := i
		for j+1 < len(ranks) && ranks[j+1] == ranks[j]+1 {
			j++
		}
		switch {
		case j == i:
			out = append(out, fmt.Sprint(ranks[i]))
		case j == i+1:
			out = append(out, fmt.Sprint(ranks[i]), fmt.Sprint(ranks[j]))
		default:
			out = append(out, fmt.Sprintf("%d-%d", ranks[i], ranks[j]))
		}
		i = j + 1
	}
	return strings.Join(out, ", ")
}

// startError is a group that could not start, with the agent's exit code.
type startError struct {
	code int
	msg  string
}

func (e *startError) Error() string { return e.msg }

// aheadKeeper is a keeper started before it is needed, or why it could not be.
type aheadKeeper struct {
	k   *keeperProc
	err error
}

// startKeeperAhead starts the first attempt's keeper while the agent forms
// the world: its start then costs the launch nothing.
func (a *agent) startKeeperAhead() {
	a.ahead = make(chan aheadKeeper, 1)
	if e, ok := keeper.TakeEarly(); ok { // started by the binary's init
		if e.Local != nil {
			a.ahead <- aheadKeeper{localKeeper(e.Local), nil}
			return
		}
		k, err := followKeeper(e.Pid, e.Fd)
		a.ahead <- aheadKeeper{k, err}
		return
	}
	go func() {
		k, err := startKeeper(a.p.Env)
		a.ahead <- aheadKeeper{k, err}
	}()
}

// takeKeeper is the keeper started ahead, if any is left (nil: start one; a
// keeper that failed to start ahead is tried again, and its error told then).
func (a *agent) takeKeeper() *keeperProc {
	if a.ahead == nil {
		return nil
	}
	r := <-a.ahead
	a.ahead = nil
	return r.k
}

// dropKeeper ends a keeper started ahead that no attempt took.
func (a *agent) dropKeeper() {
	if k := a.takeKeeper(); k != nil {
		k.discard()
	}
}
