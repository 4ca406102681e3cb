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
	stopped       bool           // the agent signalled it to stop before it ended
	stderr        tail
	errDone       chan struct{} // closed when its stderr is drained
	use           usage
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

// failed reports a rank that ended badly on its own (not stopped by the agent).
func (r *rank) failed() bool {
	return r.exited && !r.stopped && (r.code != 0 || r.sig != 0)
}

// exitCode is the process-style code: the exit code, or 128+signal.
func (r *rank) exitCode() int {
	if r.sig != 0 {
		return 128 + int(r.sig)
	}
	return r.code
}

// how says how the rank ended, for the summary.
func (r *rank) how() string {
	switch {
	case !r.exited:
		return "still running"
	case r.sig != 0:
		s := fmt.Sprintf("killed by %s", SignalName(r.sig))
		if r.stopped {
			s += " (stopped by pplaunch)"
		}
		return s
	case r.stopped:
		return fmt.Sprintf("exited with code %d after pplaunch stopped it", r.code)
	default:
		return fmt.Sprintf("exited with code %d", r.code)
	}
}

// group is the local ranks of one attempt.
type group struct {
	ranks []*rank
	exits chan int // index of each rank as it ends
	out   sync.WaitGroup
	files []*os.File

	mu sync.Mutex // guards the ranks' fields against the signalling paths
}

// startGroup starts this node's ranks for attempt restart.
func startGroup(c Config, p Program, w World, restart int, stdout, stderr *console) (*group, error) {
	g := &group{exits: make(chan int, c.NProc)}
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
		if err := g.start(c, p, path, w, restart, r, stdout, stderr); err != nil {
			g.stop(syscall.SIGKILL)
			g.wait()
			return nil, fmt.Errorf("start rank %d (local rank %d): %w", r.global, i, err)
		}
	}
	return g, nil
}

func (g *group) start(c Config, p Program, path string, w World, restart int, r *rank, stdout, stderr *console) error {
	var outFile, errFile *os.File
	if c.LogDir != "" {
		dir := filepath.Join(c.LogDir, c.RunID, "rank."+strconv.Itoa(r.global))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		flag := os.O_CREATE | os.O_WRONLY | os.O_APPEND
		if restart == 0 {
			flag |= os.O_TRUNC
		}
		var err error
		if outFile, err = os.OpenFile(filepath.Join(dir, "stdout"), flag, 0o644); err != nil {
			return err
		}
		g.files = append(g.files, outFile)
		if errFile, err = os.OpenFile(filepath.Join(dir, "stderr"), flag, 0o644); err != nil {
			return err
		}
		g.files = append(g.files, errFile)
	}
	show := c.ShowLocal(r.local) && (c.LogDir == "" || c.Tee)
	outPrefix, errPrefix := outputPrefixes(c, r.global)
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
	// Only rank 0 reads the agent's stdin (as under mpirun); the others read /dev/null.
	stdin := os.Stdin
	if r.global != 0 {
		if stdin, err = os.Open(os.DevNull); err != nil {
			return err
		}
		defer stdin.Close()
	}
	proc, err := os.StartProcess(path, append([]string{p.Path}, p.Args...), &os.ProcAttr{
		Env:   rankEnv(p.Env, c, w, r.local, restart),
		Files: []*os.File{stdin, outW, errW},
		Sys: &syscall.SysProcAttr{
			Setpgid:   true,            // the agent alone decides which signals reach the ranks
			Pdeathsig: syscall.SIGKILL, // no orphans if the agent itself is killed
		},
	})
	outW.Close()
	errW.Close()
	if err != nil {
		outR.Close()
		errR.Close()
		return err
	}
	r.pid, r.start = proc.Pid, time.Now()
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
	idx := len(g.ranks) - 1
	go func() {
		st, _ := proc.Wait()
		g.mu.Lock()
		r.end, r.exited = time.Now(), true
		if st != nil {
			ws := st.Sys().(syscall.WaitStatus)
			r.code = ws.ExitStatus()
			if ws.Signaled() {
				r.sig = ws.Signal()
			}
			ru, _ := st.SysUsage().(*syscall.Rusage)
			r.use = r.use.addExit(ru)
		}
		g.mu.Unlock()
		g.exits <- idx
	}()
	return nil
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

// stop sends sig to every rank's process group, and marks the running ranks
// stopped by the agent. Groups of ranks that already ended are signalled too:
// what a failed rank left behind goes with the job.
func (g *group) stop(sig syscall.Signal) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, r := range g.ranks {
		if !r.exited {
			r.stopped = true
		}
		syscall.Kill(-r.pid, sig)
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
