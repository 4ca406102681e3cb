package keeper

import (
	"os"
	"sync"
	"syscall"
)

// A keeper started from this package's init, before the rest of a large
// binary initialises and parses its flags, is ready by the time the agent
// has formed its world: its own start no longer delays the ranks. It starts
// on a goroutine of its own, beside the other packages' initialisation. The
// init starts one only when the command line says this process is an agent
// that will launch ranks; a guess that was wrong costs a cgroup made and
// removed (the guardian removes it at this process's exit), or a keeper that
// sees its socket close when this process exits.

// early is the keeper started by init, until TakeEarly hands it over.
var early struct {
	sync.Mutex // several agents may run in one process (tests)
	ch         chan Early
}

// Early is a keeper started before it was needed: the agent's own (Local),
// else a keeper process (Pid, and Fd, the agent's end of its socket).
type Early struct {
	Local   *Local
	Pid, Fd int
}

func init() {
	if os.Getenv(Env) == "1" || !launchesRanks(os.Args[1:], os.Getenv("PPLAUNCH_ROLE")) {
		return
	}
	ch := make(chan Early, 1)
	early.ch = ch
	go func() { ch <- startEarly() }()
}

// startEarly starts the agent's own keeper, else a keeper process (a zero
// Early: neither).
func startEarly() Early {
	if InAgent(os.Environ()) {
		if l, err := NewLocal(os.Getenv(CgroupEnv)); err == nil {
			return Early{Local: l}
		}
	}
	exe, err := os.Executable()
	if err != nil {
		return Early{}
	}
	pid, fd, err := Spawn(exe, os.Environ())
	if err != nil {
		return Early{}
	}
	return Early{Pid: pid, Fd: fd}
}

// InAgent says whether an agent with environment env may keep its ranks
// itself: not when a test holds the keeper process (HoldEnv) to kill it.
func InAgent(env []string) bool {
	for _, kv := range env {
		if kv == HoldEnv+"=1" {
			return false
		}
	}
	return true
}

// launchesRanks guesses from a pplaunch command line whether the process is
// an agent about to start ranks: not a rank itself (role), not --direct, not
// asking for help, and running a program after "--" or a command that runs
// as ranks (train, sample, bench p2p/allreduce/store).
func launchesRanks(args []string, role string) bool {
	if role == "rank" {
		return false
	}
	runs := false
	for i, a := range args {
		switch a {
		case "--":
			return true // what follows is the ranks' program, not flags
		case "--direct", "-h", "--help", "help":
			return false
		case "train", "sample":
			runs = true
		case "bench":
			if i+1 < len(args) {
				n := args[i+1]
				runs = runs || n == "p2p" || n == "allreduce" || n == "store"
			}
		}
	}
	return runs
}

// Spawn starts a keeper from executable exe (a binary that links this
// package) with environment env, and returns its pid and the agent's end of
// its socket (SOCK_SEQPACKET).
func Spawn(exe string, env []string) (pid, fd int, err error) {
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_SEQPACKET|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return 0, -1, err
	}
	defer syscall.Close(fds[1])
	// Room for a rank's whole argv and environment in one message (the
	// kernel caps it at net.core.wmem_max).
	syscall.SetsockoptInt(fds[0], syscall.SOL_SOCKET, syscall.SO_SNDBUF, 4<<20)
	null, err := syscall.Open(os.DevNull, syscall.O_RDWR|syscall.O_CLOEXEC, 0)
	if err != nil {
		syscall.Close(fds[0])
		return 0, -1, err
	}
	defer syscall.Close(null)
	kenv := make([]string, 0, len(env)+1)
	for _, kv := range env {
		if _, ok := cutPrefix(kv, Env+"="); !ok {
			kenv = append(kenv, kv)
		}
	}
	pid, err = syscall.ForkExec(exe, []string{"pplaunch-keeper"}, &syscall.ProcAttr{
		Env:   append(kenv, Env+"=1"),
		Files: []uintptr{uintptr(null), uintptr(null), 2, uintptr(fds[1])},
		Sys:   &syscall.SysProcAttr{Setpgid: true}, // terminal signals are the agent's to forward
	})
	if err != nil {
		syscall.Close(fds[0])
		return 0, -1, err
	}
	return pid, fds[0], nil
}

// TakeEarly hands over the keeper init started, once (ok false: none).
func TakeEarly() (e Early, ok bool) {
	early.Lock()
	ch := early.ch
	early.ch = nil
	early.Unlock()
	if ch == nil {
		return Early{}, false
	}
	e = <-ch
	return e, e.Local != nil || e.Pid > 0
}
