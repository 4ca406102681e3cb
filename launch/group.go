package launch

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/pplaunch/pplaunch/launch/keeper"
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

// group is the local ranks of one attempt, started and kept by one keeper.
type group struct {
	ranks    []*rank  // by local rank
	exits    chan int // index of each rank as it ends
	out      sync.WaitGroup
	files    []*os.File
	k        *keeperProc
	started  chan startReply // one per rank, or the keeper's end before they all started
	followed chan struct{}   // closed once the keeper is gone and its events are handled
	logf     func(format string, args ...any)

	mu      sync.Mutex // guards the ranks' fields and the flags below against the signalling paths
	running bool       // every rank started: a keeper's end now ends ranks
	closing bool       // the agent told the keeper the attempt is over
}

// startReply is the keeper's answer to one start: err is nil once the rank runs.
type startReply struct {
	local int
	err   error
}

// startGroup starts this node's ranks for attempt restart under k (a keeper
// started ahead, or nil for a new one). Each rank's progress file is made in
// runDir ("" for none). logf is the agent's log.
func startGroup(c Config, p Program, w World, restart int, runDir string, stdout, stderr *console,
	k *keeperProc, logf func(string, ...any)) (*group, error) {
	path := p.Path
	if filepath.Base(path) == path {
		lp, err := exec.LookPath(path)
		if err != nil {
			if k != nil {
				k.discard()
			}
			return nil, fmt.Errorf("program %q: %w", path, err)
		}
		path = lp
	}
	if k == nil {
		var err error
		if k, err = startKeeper(p.Env); err != nil {
			return nil, err
		}
	}
	g := &group{exits: make(chan int, c.NProc), k: k, started: make(chan startReply, c.NProc+1),
		followed: make(chan struct{}), logf: logf}
	for i := range c.NProc {
		g.ranks = append(g.ranks, &rank{local: i, global: w.FirstRank + i, errDone: make(chan struct{})})
	}
	go g.follow()
	for _, r := range g.ranks {
		if runDir != "" {
			r.progress = progressPath(runDir, r.global)
			if err := newProgressFile(r.progress); err != nil {
				g.abort()
				return nil, err
			}
		}
		if err := g.start(c, p, path, w, restart, r, stdout, stderr); err != nil {
			died := g.keeperDeath(err)
			g.abort()
			if died != nil {
				return nil, died
			}
			return nil, fmt.Errorf("start rank %d (local rank %d): %w", r.global, r.local, err)
		}
	}
	for range c.NProc {
		if rep := <-g.started; rep.err != nil {
			g.abort()
			if rep.local < 0 {
				return nil, rep.err
			}
			return nil, fmt.Errorf("start rank %d (local rank %d): %w", w.FirstRank+rep.local, rep.local, rep.err)
		}
	}
	g.mu.Lock()
	g.running = true
	g.mu.Unlock()
	return g, nil
}

// keeperDeath is the keeper's death as startGroup reports it, when err (of
// a start asked of it) says its socket is closed: nil if it is not that.
func (g *group) keeperDeath(err error) error {
	if !errors.Is(err, syscall.EPIPE) && !errors.Is(err, syscall.ECONNRESET) {
		return nil
	}
	<-g.followed // the keeper is gone and its end handled
	for {
		select {
		case rep := <-g.started:
			if rep.local < 0 {
				return rep.err
			}
		default:
			return nil
		}
	}
}

// abort ends a group that did not start whole: the keeper kills what it
// started.
func (g *group) abort() {
	g.wait()
}

// start opens rank r's streams and asks the keeper to start it.
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
	env := rankEnv(p.Env, c, w, r.local, restart)
	if r.progress != "" {
		env = append(env, EnvProgress+"="+r.progress)
	}
	err = g.k.start(keeper.Start{Local: r.local, Path: path, Argv: append([]string{p.Path}, p.Args...), Env: env}, stdin, outW, errW)
	outW.Close()
	errW.Close()
	if err != nil {
		outR.Close()
		errR.Close()
		return err
	}
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
	return nil
}

// follow handles the keeper's events: the ranks' starts for startGroup, their
// ends for the attempt, and the keeper's own end.
func (g *group) follow() {
	defer close(g.followed)
	for e := range g.k.events {
		if e.Kind != keeper.Ready && (e.Local < 0 || e.Local >= len(g.ranks)) {
			if e.Kind == keeper.Failed {
				g.logf("the ranks' keeper (pid %d): %s", g.k.pid(), e.Text)
			}
			continue
		}
		switch e.Kind {
		case keeper.Started:
			g.mu.Lock()
			r := g.ranks[e.Local]
			r.pid, r.start = e.Pid, e.At
			g.mu.Unlock()
			g.started <- startReply{local: e.Local}
		case keeper.Failed:
			g.started <- startReply{local: e.Local, err: errors.New(e.Text)}
		case keeper.Exited:
			g.mu.Lock()
			r := g.ranks[e.Local]
			r.exited, r.code, r.sig, r.end = true, e.Code, syscall.Signal(e.Sig), e.At
			r.use = r.use.addExit(e.CPU)
			g.mu.Unlock()
			g.exits <- e.Local
		}
	}
	g.keeperGone()
}

// keeperGone handles the keeper's end. After the agent's done that is the
// attempt's end. Before, it is a failure: the ranks it held died with it
// (PR_SET_PDEATHSIG; their processes are killed here too, and their
// cgroup), and the agent says what died and how.
func (g *group) keeperGone() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closing {
		return
	}
	keeper.Kill(g.k.cgroup)
	defer keeper.Remove(g.k.cgroup) // the keeper could not: its ranks' processes leave it as they die
	var started, pending, ended []int
	for _, r := range g.ranks {
		switch {
		case r.pid == 0:
			pending = append(pending, r.global)
		case !r.exited:
			started = append(started, r.global)
			syscall.Kill(-r.pid, syscall.SIGKILL)
			r.exited, r.code, r.sig, r.end = true, -1, syscall.SIGKILL, time.Now()
			ended = append(ended, r.local)
		}
	}
	msg := keeperDied(g.k.pid(), g.k.status, started, pending)
	if !g.running {
		g.started <- startReply{local: -1, err: &startError{code: keeperCode(g.k.status), msg: msg}}
		return
	}
	g.logf("%s", msg)
	for _, l := range ended {
		g.exits <- l
	}
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
		if r.pid > 0 && !r.exited {
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
		if r.pid > 0 && !r.exited {
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
		if r.pid > 0 && !r.exited {
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
		if r.pid == 0 || r.exited {
			continue
		}
		if u, ok := sample(r.pid); ok {
			r.use.peakRSS = max(r.use.peakRSS, u.peakRSS)
			r.use.cpu = max(r.use.cpu, u.cpu)
		}
	}
}

// wait ends the attempt: the keeper kills what is left and exits, and the
// output of every rank drains (bounded: a grandchild that keeps a pipe open
// must not hold the agent).
func (g *group) wait() {
	g.mu.Lock()
	g.closing = true
	g.mu.Unlock()
	g.k.done()
	select { // the keeper kills what is left of the ranks, then exits
	case <-g.followed:
		g.k.release()
	case <-time.After(10 * time.Second):
		// Its socket stays open: its reader still reads it.
		g.logf("the ranks' keeper (pid %d) has not finished killing what the ranks left after 10s", g.k.pid())
	}
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
