package launch

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/procfs"
	"golang.org/x/sys/unix"
)

// The keeper makes sure nothing of a rank outlives it. The agent starts each
// rank under a keeper: the agent's own executable, re-executed in this hidden
// mode (keeperEnv set; any binary that links this package has it, through
// init). The keeper
//   - is a child subreaper (PR_SET_CHILD_SUBREAPER), so what the rank leaves
//     behind (a background process, a daemon that double-forked) becomes the
//     keeper's child instead of init's;
//   - starts the rank in its own process group (the agent signals that
//     group) with PR_SET_PDEATHSIG, so the rank dies with the keeper;
//   - holds one end of a socket pair whose other end only the agent holds:
//     it reads EOF when the agent is gone, however it died (SIGKILL
//     included), and then kills the whole subtree;
//   - kills the whole subtree when the rank exits, then tells the agent how
//     the rank ended and exits.
//
// Protocol on the socket (fd 3), keeper to agent, one line each:
// "pid PID" once the rank runs (or "error TEXT" and exit 127), then
// "exit CODE SIGNAL UNIXNANO" after the rank ended and its subtree was killed.
const keeperEnv = "PPLAUNCH_KEEPER"

func init() {
	if os.Getenv(keeperEnv) == "1" {
		os.Exit(keep(os.Args[1:]))
	}
}

// keep is the keeper's main: args are the program's path, then its argv.
func keep(args []string) int {
	// The rank's PR_SET_PDEATHSIG follows the thread that forks it: keep this
	// goroutine on one thread, which lives until the keeper exits.
	runtime.LockOSThread()
	ctl := os.NewFile(3, "agent")
	if ctl == nil || len(args) < 2 {
		fmt.Fprintln(os.Stderr, "pplaunch: keeper: started without its agent")
		return 127
	}
	// Signals are the agent's to send to the rank's group; the keeper stays.
	// (Caught, not ignored: an ignored signal would stay ignored in the rank.)
	signal.Notify(make(chan os.Signal, 1), syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP,
		syscall.SIGUSR1, syscall.SIGUSR2, syscall.SIGTSTP, syscall.SIGTTIN, syscall.SIGTTOU, syscall.SIGPIPE)
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		fmt.Fprintf(ctl, "error PR_SET_CHILD_SUBREAPER: %v\n", err)
		return 127
	}
	env := make([]string, 0, len(os.Environ()))
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, keeperEnv+"=") {
			env = append(env, kv)
		}
	}
	proc, err := os.StartProcess(args[0], args[1:], &os.ProcAttr{
		Env:   env,
		Files: []*os.File{os.Stdin, os.Stdout, os.Stderr},
		Sys:   &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL},
	})
	if err != nil {
		fmt.Fprintf(ctl, "error %s\n", strings.ReplaceAll(err.Error(), "\n", " "))
		return 127
	}
	rank := proc.Pid
	fmt.Fprintf(ctl, "pid %d\n", rank)
	os.Stdin.Close()
	os.Stdout.Close()
	os.Stderr.Close()
	agentGone := make(chan struct{})
	go func() {
		io.Copy(io.Discard, bufio.NewReader(ctl)) // returns at EOF: the agent is gone
		close(agentGone)
		killTree(rank)
	}()
	// Reap every child: the rank, and what it left behind. The rank's
	// status is what the agent hears; its orphans are killed.
	var status unix.WaitStatus
	var ended time.Time
	for {
		var ws unix.WaitStatus
		pid, err := unix.Wait4(-1, &ws, 0, nil)
		if err == unix.EINTR {
			continue
		}
		if err != nil { // ECHILD: no child left
			break
		}
		if pid == rank {
			status, ended = ws, time.Now()
			killTree(rank)
		} else if !ended.IsZero() {
			killTree(rank)
		}
		select {
		case <-agentGone:
			killTree(rank)
		default:
		}
	}
	code, sig := status.ExitStatus(), 0
	if status.Signaled() {
		code, sig = -1, int(status.Signal())
	}
	fmt.Fprintf(ctl, "exit %d %d %d\n", code, sig, ended.UnixNano())
	if sig != 0 {
		return 128 + sig
	}
	return code
}

// killTree SIGKILLs the rank's process group and every child of the keeper
// (orphans re-parent to it, a subreaper, as their parents die; the reaping
// loop calls this again after each death, so it reaches them all).
func killTree(rankPgid int) {
	unix.Kill(-rankPgid, unix.SIGKILL)
	me := os.Getpid()
	procs, err := procfs.AllProcs()
	if err != nil {
		return
	}
	for _, p := range procs {
		st, err := p.Stat()
		if err == nil && st.PPID == me {
			unix.Kill(p.PID, unix.SIGKILL)
			unix.Kill(-p.PID, unix.SIGKILL) // its group, if it made one
		}
	}
}

// keeperLink is the agent's end of a keeper's socket.
type keeperLink struct {
	f *os.File
	r *bufio.Reader
}

// readPid reads the keeper's first line: the rank's pid.
func (k *keeperLink) readPid() (int, error) {
	line, err := k.r.ReadString('\n')
	if err != nil {
		return 0, fmt.Errorf("keeper: %v", err)
	}
	line = strings.TrimSpace(line)
	if msg, ok := strings.CutPrefix(line, "error "); ok {
		return 0, fmt.Errorf("%s", msg)
	}
	pid, err := strconv.Atoi(strings.TrimPrefix(line, "pid "))
	if err != nil {
		return 0, fmt.Errorf("keeper said %q", line)
	}
	return pid, nil
}

// readExit reads how the rank ended; ok is false if the keeper died first.
func (k *keeperLink) readExit() (code int, sig syscall.Signal, at time.Time, ok bool) {
	line, err := k.r.ReadString('\n')
	if err != nil {
		return 0, 0, time.Time{}, false
	}
	var s int
	var ns int64
	if _, err := fmt.Sscanf(line, "exit %d %d %d", &code, &s, &ns); err != nil {
		return 0, 0, time.Time{}, false
	}
	return code, syscall.Signal(s), time.Unix(0, ns), true
}

// newKeeperLink makes the socket pair: the agent's end, and the keeper's end
// to pass as its fd 3 (close it in the agent after the start).
func newKeeperLink() (*keeperLink, *os.File, error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("keeper socket: %w", err)
	}
	f := os.NewFile(uintptr(fds[0]), "keeper")
	return &keeperLink{f: f, r: bufio.NewReader(f)}, os.NewFile(uintptr(fds[1]), "agent"), nil
}
