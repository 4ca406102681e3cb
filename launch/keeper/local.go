package keeper

import (
	"errors"
	"os"
	"os/signal"
	"runtime"
	"sync/atomic"
	"syscall"
)

// The agent's own keeper: where the agent can make a cgroup for the job, it
// starts its ranks itself, with no keeper process exec'd at every launch.
// The ranks are the agent's children, forked from one OS thread locked for
// the job's life (PR_SET_PDEATHSIG follows the thread that forked them), in
// their own process groups and cloned into the job's cgroup. The cgroup
// holds whatever the ranks leave behind however it detaches, so the agent
// needs no subreaper: it waits for its ranks by pid alone (a wait for any
// child would take the children of the rest of the process). A guardian
// forked without exec (guardian_cgo.go) holds the read end of a pipe whose
// write end only the agent holds; at EOF, when the agent is done or dead
// (SIGKILL included), it kills the cgroup. The agent's keeper reports the
// same events as a keeper process, on a channel instead of the socket.

// GuardianName is the guardian's name (its /proc/PID/comm): having no exec
// of its own, it has the agent's command line and environment.
const GuardianName = "pplaunch-guard"

// Local is the agent's own keeper for one attempt.
type Local struct {
	Events <-chan Event // closed once every rank is reaped and the cgroup removed
	Dir    string       // the job's cgroup
	starts chan request
	gone   chan struct{}
	guard  guardian
	done   atomic.Bool
}

// localSeq tells apart the cgroups of the attempts (and agents) of one process.
var localSeq atomic.Int64

// NewLocal makes the job's cgroup and its guardian, or says why it cannot
// (setting: the value of CgroupEnv); the agent then starts a keeper process.
func NewLocal(setting string) (*Local, error) {
	name := "pplaunch-" + itoa(os.Getpid()) + "-" + itoa(int(localSeq.Add(1)))
	cg, err := openCgroups(name, setting)
	if err != nil {
		return nil, err
	}
	g, err := startGuardian(cg.dir)
	if err != nil {
		syscall.Close(cg.fd)
		Remove(cg.dir)
		return nil, errors.New("fork the guardian of the job's cgroup: " + err.Error())
	}
	events := make(chan Event, 64)
	l := &Local{Events: events, Dir: cg.dir, starts: make(chan request), gone: make(chan struct{}), guard: g}
	k := &keeper{cg: cg, running: map[int]running{}, ended: map[int]bool{}, inAgent: true, events: events}
	go l.run(k, events)
	return l, nil
}

// Start starts one rank with these standard streams; it returns once the
// rank runs or failed to start, which an event tells.
func (l *Local) Start(s Start, stdin, stdout, stderr *os.File) error {
	req := request{s: s, fds: []int{int(stdin.Fd()), int(stdout.Fd()), int(stderr.Fd())},
		borrowed: true, done: make(chan struct{})}
	select {
	case l.starts <- req:
		<-req.done
	case <-l.gone:
		return errors.New("the attempt is over")
	}
	runtime.KeepAlive(stdin)
	runtime.KeepAlive(stdout)
	runtime.KeepAlive(stderr)
	return nil
}

// Done ends the attempt: what is left of the ranks is killed, and Events
// closes once they are reaped. It does not wait.
func (l *Local) Done() {
	if !l.done.Swap(true) {
		close(l.gone)
	}
}

// run is the keeper's loop, on the thread its ranks die with.
func (l *Local) run(k *keeper, events chan<- Event) {
	// Locked and never unlocked: the thread ends with the goroutine, once
	// every rank is reaped.
	runtime.LockOSThread()
	chld := make(chan os.Signal, 1)
	signal.Notify(chld, syscall.SIGCHLD)
	defer signal.Stop(chld)
	k.serve(l.starts, l.gone, chld, func() {
		syscall.Close(l.guard.wfd) // the guardian kills the cgroup too
	})
	syscall.Close(k.cg.fd)
	Remove(k.cg.dir)
	var ws syscall.WaitStatus
	for {
		if _, err := syscall.Wait4(l.guard.pid, &ws, 0, nil); err != syscall.EINTR {
			break
		}
	}
	l.guard.release()
	close(events)
}

// reapRanks waits for the ranks that ended, by pid; it returns whether any
// rank runs.
func (k *keeper) reapRanks() bool {
	for pid, r := range k.running {
		var ws syscall.WaitStatus
		var ru syscall.Rusage
		got, err := syscall.Wait4(pid, &ws, syscall.WNOHANG, &ru)
		for err == syscall.EINTR {
			got, err = syscall.Wait4(pid, &ws, syscall.WNOHANG, &ru)
		}
		if got == pid {
			k.dirty = true
			k.ended1(pid, r, ws, &ru)
		}
	}
	return len(k.running) > 0
}
