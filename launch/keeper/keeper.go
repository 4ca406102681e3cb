package keeper

import (
	"errors"
	"os"
	"os/signal"
	"runtime"
	"syscall"
	"time"
)

// Linux constants the syscall package does not name. (The keeper uses only
// the standard library, so that its mode starts before the binary's other
// packages initialise: see the package comment.)
const (
	prSetChildSubreaper = 36       // PR_SET_CHILD_SUBREAPER
	oPath               = 0x200000 // O_PATH
)

// setChildSubreaper makes this process the subreaper of its descendants.
func setChildSubreaper() error {
	if _, _, e := syscall.RawSyscall(syscall.SYS_PRCTL, prSetChildSubreaper, 1, 0); e != 0 {
		return e
	}
	return nil
}

// ctlFd is the keeper's end of its socket with the agent.
const ctlFd = 3

// maxMessage bounds one start message (a rank's argv and environment).
const maxMessage = 4 << 20

// sweepDelay is how long after a rank's end the keeper looks for what it left
// behind: one look then covers every rank that ended meanwhile (64 ranks that
// end together cost a few looks, not 64, each listing the job's processes).
const sweepDelay = 5 * time.Millisecond

// HoldEnv set to 1 makes the keeper stop itself (SIGSTOP) before it starts any
// rank: a test's way to kill a keeper at a known moment.
const HoldEnv = "PPLAUNCH_TEST_KEEPER_HOLD"

func init() {
	if os.Getenv(Env) == "1" {
		os.Exit(run())
	}
}

// request is one start message read from the agent, with its descriptors.
type request struct {
	s        Start
	fds      []int
	err      error
	borrowed bool          // the fds are the agent's: not closed here
	done     chan struct{} // closed once the rank is started (or not)
}

// running is a rank the keeper started and has not yet reaped.
type running struct {
	local int
}

type keeper struct {
	cg      *cgroups
	running map[int]running // by pid
	ended   map[int]bool    // local ranks that ended
	dirty   bool            // a child ended since the last sweep
	due     bool            // sweepDelay has passed since the first of those ends
	gone    bool            // the agent closed its end: kill everything, then exit
	inAgent bool            // the agent's own (local.go): it reaps its ranks alone
	events  chan<- Event    // where the agent's own keeper reports (nil: the socket)
}

// send reports e to the agent.
func (k *keeper) send(e Event) {
	if k.events != nil {
		k.events <- e
		return
	}
	send(e)
}

// run is the keeper's main.
func run() int {
	// The ranks' PR_SET_PDEATHSIG follows the thread that forks them: every
	// start happens on this goroutine, locked to a thread that lives until
	// the keeper exits.
	runtime.LockOSThread()
	if t, err := syscall.GetsockoptInt(ctlFd, syscall.SOL_SOCKET, syscall.SO_TYPE); err != nil || t != syscall.SOCK_SEQPACKET {
		os.Stderr.WriteString("pplaunch: keeper: started without its agent\n")
		return 127
	}
	// The ranks must not inherit the socket: the agent reads its EOF as the
	// keeper's end.
	syscall.CloseOnExec(ctlFd)
	// Signals are the agent's to send to the ranks' groups; the keeper stays.
	// (Caught, not ignored: an ignored signal would stay ignored in a rank.)
	signal.Notify(make(chan os.Signal, 1), syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP,
		syscall.SIGUSR1, syscall.SIGUSR2, syscall.SIGTSTP, syscall.SIGTTIN, syscall.SIGTTOU, syscall.SIGPIPE)
	chld := make(chan os.Signal, 1)
	signal.Notify(chld, syscall.SIGCHLD)
	if err := setChildSubreaper(); err != nil {
		send(Event{Kind: Failed, Local: -1, Text: "PR_SET_CHILD_SUBREAPER: " + err.Error()})
		return 127
	}
	k := &keeper{running: map[int]running{}, ended: map[int]bool{}}
	k.cg, _ = openCgroups("pplaunch-"+itoa(os.Getpid()), os.Getenv(CgroupEnv)) // none: process groups and environments do
	dir := ""
	if k.cg != nil {
		dir = k.cg.dir
	}
	send(Event{Kind: Ready, Text: dir})
	if os.Getenv(HoldEnv) == "1" {
		syscall.Kill(os.Getpid(), syscall.SIGSTOP)
	}
	starts, gone := make(chan request, 64), make(chan struct{})
	go read(starts, gone)
	k.serve(starts, gone, chld, nil)
	if k.cg != nil {
		Remove(k.cg.dir)
	}
	return 0
}

// serve starts the ranks asked for and keeps them until the agent is gone
// (then onGone runs, if any) and no rank is left.
func (k *keeper) serve(starts <-chan request, gone <-chan struct{}, chld <-chan os.Signal, onGone func()) {
	var soon <-chan time.Time // the sweep due for the ranks that ended
	for {
		select {
		case req := <-starts:
			k.start(req)
		case <-chld:
		case <-soon:
			soon, k.due = nil, true
		case <-gone:
			gone, k.gone = nil, true
			if onGone != nil {
				onGone()
			}
		}
		left := k.reap()
		switch {
		case k.gone || k.due:
			k.sweep()
			k.due = false
		case k.dirty && len(k.ended) > 0 && soon == nil:
			soon = time.After(sweepDelay)
		}
		if k.gone && !left {
			return
		}
	}
}

// read delivers the agent's start messages, and closes gone at EOF: the
// agent is done, or dead.
func read(starts chan<- request, gone chan<- struct{}) {
	defer close(gone)
	buf := make([]byte, 64<<10) // grown to the largest message
	oob := make([]byte, syscall.CmsgSpace(3*4))
	for {
		// The message's length first (MSG_TRUNC returns it whole), then the message.
		n, _, _, _, err := syscall.Recvmsg(ctlFd, buf[:1], nil, syscall.MSG_PEEK|syscall.MSG_TRUNC)
		if err == syscall.EINTR {
			continue
		}
		if err != nil || n == 0 {
			return
		}
		if n > len(buf) && n <= maxMessage {
			buf = make([]byte, n)
		}
		n, oobn, flags, _, err := syscall.Recvmsg(ctlFd, buf, oob, syscall.MSG_CMSG_CLOEXEC)
		if err == syscall.EINTR {
			continue
		}
		if err != nil || n == 0 {
			return
		}
		req := request{}
		if flags&(syscall.MSG_TRUNC|syscall.MSG_CTRUNC) != 0 {
			req.err = errors.New("start message over " + itoa(maxMessage) + " bytes")
		}
		if cmsgs, err := syscall.ParseSocketControlMessage(oob[:oobn]); err == nil {
			for _, c := range cmsgs {
				fds, _ := syscall.ParseUnixRights(&c)
				req.fds = append(req.fds, fds...)
			}
		}
		if req.err == nil {
			req.s, req.err = DecodeStart(buf[:n])
		}
		if req.err == nil && len(req.fds) != 3 {
			req.err = errors.New("start message with " + itoa(len(req.fds)) + " descriptors, want 3 (stdin, stdout, stderr)")
		}
		starts <- req
	}
}

// send writes one event to the agent (lost if the agent is gone: the
// keeper then only cleans up).
func send(e Event) {
	syscall.SendmsgN(ctlFd, e.Encode(), nil, nil, syscall.MSG_NOSIGNAL)
}

// start starts one rank in its own process group (and cgroup, if any), to die
// with this thread, and reports its pid or why it did not start.
func (k *keeper) start(req request) {
	defer func() {
		if req.done != nil {
			close(req.done)
		}
		for _, fd := range req.fds {
			if !req.borrowed {
				syscall.Close(fd)
			}
		}
	}()
	if req.err != nil {
		k.send(Event{Kind: Failed, Local: req.s.Local, Text: req.err.Error()})
		return
	}
	if k.gone {
		return
	}
	s := req.s
	attr := &syscall.ProcAttr{
		Env:   s.Env,
		Files: []uintptr{uintptr(req.fds[0]), uintptr(req.fds[1]), uintptr(req.fds[2])},
		Sys:   &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL},
	}
	if k.cg != nil && k.cg.fd >= 0 {
		attr.Sys.UseCgroupFD, attr.Sys.CgroupFD = true, k.cg.fd
	}
	at := time.Now()
	pid, err := syscall.ForkExec(s.Path, s.Argv, attr)
	if err != nil && attr.Sys.UseCgroupFD {
		// The kernel may refuse the cgroup (clone3 missing, a group that
		// takes no processes): start without, and clone into it no more.
		syscall.Close(k.cg.fd)
		k.cg.fd, attr.Sys.UseCgroupFD = -1, false
		pid, err = syscall.ForkExec(s.Path, s.Argv, attr)
	}
	if err != nil {
		k.send(Event{Kind: Failed, Local: s.Local, Text: "fork/exec " + s.Path + ": " + err.Error()})
		return
	}
	k.running[pid] = running{local: s.Local}
	k.send(Event{Kind: Started, Local: s.Local, Pid: pid, At: at})
}

// reap waits for every child that ended: a rank's end kills what it left
// behind and is reported; an orphan's is only reaped. It returns whether
// any child is left.
func (k *keeper) reap() bool {
	if k.inAgent {
		return k.reapRanks()
	}
	for {
		var ws syscall.WaitStatus
		var ru syscall.Rusage
		pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, &ru)
		if err == syscall.EINTR {
			continue
		}
		if err != nil || pid <= 0 {
			return err == nil // ECHILD: none left; 0: some run
		}
		k.dirty = true
		r, ok := k.running[pid]
		if !ok {
			continue // an orphan: its death may orphan more
		}
		k.ended1(pid, r, ws, &ru)
	}
}

// ended1 handles the end of rank r (pid): what it left in its process group
// is killed, and the agent told.
func (k *keeper) ended1(pid int, r running, ws syscall.WaitStatus, ru *syscall.Rusage) {
	at := time.Now()
	delete(k.running, pid)
	syscall.Kill(-pid, syscall.SIGKILL) // what it left in its process group
	k.ended[r.local] = true
	code, sig := ws.ExitStatus(), 0
	if ws.Signaled() {
		code, sig = -1, int(ws.Signal())
	}
	k.send(Event{Kind: Exited, Local: r.local, Code: code, Sig: sig, At: at,
		CPU: time.Duration(ru.Utime.Nano() + ru.Stime.Nano())})
}

// sweep kills what ended ranks left behind; once the agent is gone, it kills
// everything. (Each death may re-parent more orphans to the keeper; the next
// reap and sweep reach them.)
func (k *keeper) sweep() {
	if !k.gone && (!k.dirty || len(k.ended) == 0) {
		return
	}
	k.dirty = false
	if k.gone {
		if k.cg != nil {
			Kill(k.cg.dir) // every process of the job at once, however it hid
		}
		for pid := range k.running {
			killProc(pid)
		}
	}
	// Every rank is in the job's cgroup unless the kernel refused it: its
	// processes are the candidates, and nothing under /proc/self is read
	// (reaping a process whose /proc entries were looked up costs the
	// kernel a walk of the dentry cache, about a millisecond for the
	// keeper). Without one, the keeper's children are.
	inCgroup := k.cg != nil && k.cg.fd >= 0
	if inCgroup && k.gone {
		return
	}
	var kids []int
	var err error
	if !inCgroup && k.inAgent {
		return // the agent's children are not only ranks: process groups do
	}
	if !inCgroup {
		kids = children()
	} else if kids, err = procs(k.cg.dir); err != nil {
		kids = children()
	}
	ranks := map[int]bool{}
	for pid := range k.running {
		ranks[pid] = true
	}
	for _, pid := range doomed(kids, ranks, k.ended, ownerFromProc, k.gone) {
		killProc(pid)
	}
}
