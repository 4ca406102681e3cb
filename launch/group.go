package launch

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Program is what each rank runs, and where the agent's console is.
type Program struct {
	Path   string   // executable (looked up in PATH when it has no slash)
	Args   []string // arguments after the program name
	Env    []string // the agent's environment; the rank contract is laid over it
	Stdout io.Writer
	Stderr io.Writer
}

// rank is one local rank of one attempt.
type rank struct {
	local, global int
	pid           int
	start, end    time.Time
	exited        bool
	code          int            // exit code; -1 when a signal ended it
	sig           syscall.Signal // the signal that ended it, or 0
	stopSent      signalSet      // the signals the agent sent it to stop it (stoppedByAgent)
	stderr        tail
	errDone       chan struct{} // closed when its stderr is drained
	use           usage
	progress      string // its progress file ("" none)
}

// drained waits (at most d: a grandchild may hold the pipe) for r's stderr.
func (r *rank) drained(d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-r.errDone:
	case <-t.C:
	}
}

// how says how the rank ended, for the summary.
func (r *rank) how() string {
	if !r.exited {
		return "still running"
	}
	return exitHow(r.code, r.sig, r.stoppedByAgent())
}

// stoppedByAgent reports whether the agent's stop ended the rank (endedByStop).
func (r *rank) stoppedByAgent() bool { return endedByStop(r.stopSent, r.sig) }

// keeperPath is this executable, which runs each rank's keeper.
var keeperPath, keeperErr = os.Executable()

// group is the local ranks of one attempt.
type group struct {
	ranks []*rank
	exits chan int // index of each rank as it ends
	out   sync.WaitGroup
	files []*os.File

	mu sync.Mutex // guards the ranks' fields against the signalling paths
}

// startGroup starts this node's ranks for attempt restart.
// Each rank's progress file is made in runDir ("" for none).
func startGroup(c Config, p Program, w World, restart int, runDir string, stdout, stderr *console) (*group, error) {
	g := &group{exits: make(chan int, c.NProc)}
	if keeperErr != nil {
		return nil, fmt.Errorf("find this executable to run the ranks' keepers: %w", keeperErr)
	}
	path := p.Path
	if filepath.Base(path) == path {
		lp, err := exec.LookPath(path)
		if err != nil {
			return nil, fmt.Errorf("program %q: %w", path, err)
		}
		path = lp
	}
	for i := range c.NProc {
		r := &rank{local: i, global: w.FirstRank + i, errDone: make(chan struct{})}
		if runDir != "" {
			r.progress = progressPath(runDir, r.global)
			if err := newProgressFile(r.progress); err != nil {
				g.stop(syscall.SIGKILL)
				g.wait()
				return nil, err
			}
		}
		if err := g.start(c, p, path, w, restart, r, stdout, stderr); err != nil {
			g.stop(syscall.SIGKILL)
			g.wait()
			return nil, fmt.Errorf("start rank %d (local rank %d): %w", r.global, i, err)
		}
	}
	return g, nil
}

func (g *group) start(c Config, p Program, path string, w World, restart int, r *rank, stdout, stderr *console) error {
	outFile, errFile, err := g.openLogs(c, r, restart)
	if err != nil {
		return err
	}
	show := c.ShowLocal(r.local) && (c.LogDir == "" || c.Tee)
	outPrefix, errPrefix := outputPrefixes(c, r.global)
	// Only rank 0 reads the agent's stdin (as under mpirun); the others read /dev/null.
	stdin := os.Stdin
	if r.global != 0 {
		if stdin, err = os.Open(os.DevNull); err != nil {
			return err
		}
		defer stdin.Close()
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		return err
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		outR.Close()
		outW.Close()
		return err
	}
	link, keeperEnd, err := newKeeperLink()
	if err != nil {
		outR.Close()
		outW.Close()
		errR.Close()
		errW.Close()
		return err
	}
	env := append(rankEnv(p.Env, c, w, r.local, restart), keeperEnv+"=1")
	if r.progress != "" {
		env = append(env, EnvProgress+"="+r.progress)
	}
	// The rank runs under a keeper (keeper.go), in its own process group.
	proc, err := os.StartProcess(keeperPath, append([]string{"pplaunch-keeper", path, p.Path}, p.Args...), &os.ProcAttr{
		Env:   env,
		Files: []*os.File{stdin, outW, errW, keeperEnd},
		Sys:   &syscall.SysProcAttr{Setpgid: true}, // terminal signals are the agent's to forward
	})
	outW.Close()
	errW.Close()
	keeperEnd.Close()
	if err == nil {
		if r.pid, err = link.readPid(); err != nil {
			proc.Kill()
			proc.Wait()
		}
	}
	if err != nil {
		link.f.Close()
		outR.Close()
		errR.Close()
		return err
	}
	r.start = time.Now()
	g.ranks = append(g.ranks, r)
	var outCon, errCon *console
	if show {
		outCon, errCon = stdout, stderr
	}
	g.out.Add(2)
	go func() {
		defer g.out.Done()
		pump(outR, outCon, outPrefix, writerOrNil(outFile), nil)
		outR.Close()
	}()
	go func() {
		defer g.out.Done()
		pump(errR, errCon, errPrefix, writerOrNil(errFile), &r.stderr)
		errR.Close()
		close(r.errDone)
	}()
	go g.watch(len(g.ranks)-1, r, proc, link)
	return nil
}

// watch waits for rank r's end (its keeper's report, then the keeper's exit)
// and sends its index on g.exits.
func (g *group) watch(idx int, r *rank, proc *os.Process, link *keeperLink) {
	code, sig, at, reported := link.readExit()
	st, _ := proc.Wait()
	link.f.Close()
	g.mu.Lock()
	r.end, r.exited = time.Now(), true
	if reported {
		r.code, r.sig, r.end = code, sig, at
	} else if st != nil { // the keeper itself was killed
		ws := st.Sys().(syscall.WaitStatus)
		r.code = ws.ExitStatus()
		if ws.Signaled() {
			r.sig = ws.Signal()
		}
	}
	if st != nil {
		ru, _ := st.SysUsage().(*syscall.Rusage)
		r.use = r.use.addExit(ru)
	}
	g.mu.Unlock()
	g.exits <- idx
}

// openLogs opens rank r's --log-dir files (nil without --log-dir).
func (g *group) openLogs(c Config, r *rank, restart int) (outFile, errFile *os.File, err error) {
	if c.LogDir == "" {
		return nil, nil, nil
	}
	dir := filepath.Join(c.LogDir, c.RunID, "rank."+strconv.Itoa(r.global))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, nil, err
	}
	flag := os.O_CREATE | os.O_WRONLY | os.O_APPEND
	if restart == 0 {
		flag |= os.O_TRUNC
	}
	if outFile, err = os.OpenFile(filepath.Join(dir, "stdout"), flag, 0o644); err != nil {
		return nil, nil, err
	}
	g.files = append(g.files, outFile)
	if errFile, err = os.OpenFile(filepath.Join(dir, "stderr"), flag, 0o644); err != nil {
		return nil, nil, err
	}
	g.files = append(g.files, errFile)
	return outFile, errFile, nil
}

// writerOrNil keeps a nil *os.File from becoming a non-nil io.Writer.
func writerOrNil(f *os.File) io.Writer {
	if f == nil {
		return nil
	}
	return f
}

// signal sends sig to every running rank's process group.
func (g *group) signal(sig syscall.Signal) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, r := range g.ranks {
		if !r.exited {
			syscall.Kill(-r.pid, sig)
		}
	}
}

// stop sends sig to every running rank's process group, and marks those
// ranks stopped by the agent; a SIGCONT follows, so that a stopped rank acts
// on it. (What an ended rank left behind its keeper killed already.)
func (g *group) stop(sig syscall.Signal) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, r := range g.ranks {
		if !r.exited {
			r.stopSent = r.stopSent.with(sig)
			syscall.Kill(-r.pid, sig)
			if sig != syscall.SIGKILL {
				syscall.Kill(-r.pid, syscall.SIGCONT)
			}
		}
	}
}

// suspend stops every running rank's process group (job control: the agent
// got SIGTSTP) and waits, a bounded while, until each rank is stopped, so
// that the agent stops last.
func (g *group) suspend() {
	g.signal(syscall.SIGSTOP)
	g.mu.Lock()
	var pids []int
	for _, r := range g.ranks {
		if !r.exited {
			pids = append(pids, r.pid)
		}
	}
	g.mu.Unlock()
	deadline := time.Now().Add(2 * time.Second)
	for _, pid := range pids {
		for !procStopped(pid) && time.Now().Before(deadline) {
			if err := syscall.Kill(pid, 0); err != nil {
				break // gone
			}
			time.Sleep(time.Millisecond)
		}
	}
}

// sample records each running rank's memory and CPU from /proc.
func (g *group) sample() {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, r := range g.ranks {
		if r.exited {
			continue
		}
		if u, ok := sample(r.pid); ok {
			r.use.peakRSS = max(r.use.peakRSS, u.peakRSS)
			r.use.cpu = max(r.use.cpu, u.cpu)
		}
	}
}

// wait waits for the output of every rank to drain (after they all exited),
// bounded: a grandchild that keeps a pipe open must not hold the agent.
func (g *group) wait() {
	done := make(chan struct{})
	go func() {
		g.out.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(2 * time.Second):
	}
	for _, f := range g.files {
		f.Close()
	}
}

// SignalName is "SIGKILL" for 9, or "signal N" for a number with no name.
func SignalName(s syscall.Signal) string {
	if name := unix.SignalName(s); name != "" {
		return name
	}
	return fmt.Sprintf("signal %d", int(s))
}
