package launch

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"strconv"
	"syscall"
	"time"

	"github.com/pplaunch/pplaunch/ranks/store"
)

// sampleEvery is how often the agent reads its ranks' memory and CPU from
// /proc (procfs): the peak RSS in the summary is the largest VmHWM seen.
const sampleEvery = 200 * time.Millisecond

// failure is the first failure of an attempt, shared with the other nodes
// through the store.
type failure struct {
	Node   int      `json:"node"`
	Host   string   `json:"host"`
	Rank   int      `json:"rank"`  // -1: not a rank (the agent got a signal, lost the store)
	Local  int      `json:"local"` // local rank
	Code   int      `json:"code"`  // the code the agents exit with
	How    string   `json:"how"`   // "exited with code 3", "killed by SIGKILL"
	Pid    int      `json:"pid"`
	After  string   `json:"after"`  // time since the attempt started
	Final  bool     `json:"final"`  // no restart (the job was told to stop)
	Stderr []string `json:"stderr"` // its last lines
}

// Forwarded are the signals the agent forwards to its ranks; SIGINT, SIGTERM
// and SIGHUP also stop the job.
var Forwarded = []os.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGUSR1, syscall.SIGUSR2}

func stopsJob(s syscall.Signal) bool {
	return s == syscall.SIGINT || s == syscall.SIGTERM || s == syscall.SIGHUP
}

type agent struct {
	c        Config
	p        Program
	out, err *console
	host     string
	server   *store.Server // node 0 only
	client   *store.Client // multi-node: the agents' namespace
	sigs     <-chan os.Signal
	formed   bool // a world formed: the other nodes use the store until they leave
}

// Run is the agent: it forms the world with the other nodes' agents, runs this
// node's ranks, supervises them and restarts the group up to c.MaxRestarts
// times. sigs delivers the signals to forward (see Forwarded); cancelling ctx
// stops the job as SIGTERM does. It returns the process exit code: 0, the first
// failure's exit code, or 128+signal.
func Run(ctx context.Context, c Config, p Program, sigs <-chan os.Signal) int {
	a := &agent{c: c, p: p, out: &console{w: p.Stdout}, err: &console{w: p.Stderr}, sigs: sigs}
	a.host, _ = os.Hostname()
	code, err := a.run(ctx)
	if err != nil {
		a.logf("%v", err)
	}
	return code
}

func (a *agent) logf(format string, args ...any) {
	prefix := "pplaunch: "
	if a.c.NNodes > 1 {
		prefix = fmt.Sprintf("pplaunch[node %d]: ", a.c.NodeRank)
	}
	a.err.line(prefix + fmt.Sprintf(format, args...))
}

func (a *agent) run(ctx context.Context) (int, error) {
	var storeAddr string
	sig, err := a.untilSignal(ctx, func(ctx context.Context) (err error) {
		storeAddr, err = a.openStore(ctx)
		return err
	})
	defer a.closeStore()
	if sig != 0 {
		return 128 + int(sig), fmt.Errorf("received %s while joining the rendezvous", SignalName(sig))
	}
	if err != nil {
		return 1, err
	}
	defer a.leave()
	for restart := 0; ; restart++ {
		var w World
		sig, err := a.untilSignal(ctx, func(ctx context.Context) (err error) {
			w, err = a.rendezvous(ctx, restart, storeAddr)
			return err
		})
		if sig != 0 {
			return 128 + int(sig), fmt.Errorf("received %s during the rendezvous", SignalName(sig))
		}
		if err != nil {
			return 1, err
		}
		a.formed = true
		f, err := a.attempt(ctx, w, restart)
		if err != nil {
			return 1, err
		}
		if f == nil {
			return 0, nil
		}
		if f.Final || restart >= a.c.MaxRestarts {
			return f.Code, nil
		}
		a.logf("restarting the group on every node (restart %d of %d)", restart+1, a.c.MaxRestarts)
	}
}

// untilSignal runs f, cancelling it when a signal that stops the job arrives
// (no ranks run yet, so there is nothing to forward). It returns that signal,
// or 0 and f's error.
func (a *agent) untilSignal(ctx context.Context, f func(ctx context.Context) error) (syscall.Signal, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- f(ctx) }()
	for {
		select {
		case err := <-done:
			return 0, err
		case s := <-a.sigs:
			if sig := s.(syscall.Signal); stopsJob(sig) {
				cancel()
				<-done
				return sig, nil
			}
		}
	}
}

// openStore hosts the store (node 0) and, with several nodes, connects the
// agent to it. It returns the address ranks dial.
func (a *agent) openStore(ctx context.Context) (string, error) {
	addr := joinHostPort(a.c.StoreHost, a.c.StorePort)
	if a.c.NodeRank == 0 {
		bind := addr
		if a.c.NNodes > 1 {
			bind = joinHostPort("", a.c.StorePort) // every interface: other nodes dial our name
		}
		s, err := store.Listen(bind, a.c.Token, func(format string, args ...any) {
			a.logf(format, args...)
		})
		if err != nil {
			return "", fmt.Errorf("node 0 hosts the rendezvous store: %w", err)
		}
		a.server = s
		addr = joinHostPort(a.c.StoreHost, s.Addr().(*net.TCPAddr).Port)
	}
	if a.c.NNodes > 1 {
		dctx, cancel := context.WithTimeout(ctx, a.c.RdzvTimeout)
		defer cancel()
		cl, err := store.Dial(dctx, addr, a.c.Token, "agent/")
		if err != nil {
			return "", fmt.Errorf("node %d joins the rendezvous at %s: %w", a.c.NodeRank, addr, err)
		}
		a.client = cl
	}
	return addr, nil
}

// leave tells node 0 this agent is done with the store; node 0 waits (a
// bounded while: a node may be gone) until every node has, so the store does
// not vanish under a node still reading the outcome.
func (a *agent) leave() {
	if a.client == nil || !a.formed {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), a.c.GracePeriod+10*time.Second)
	defer cancel()
	if err := a.client.Set(ctx, "left/"+strconv.Itoa(a.c.NodeRank), nil); err != nil || a.c.NodeRank != 0 {
		return
	}
	keys := make([]string, a.c.NNodes)
	for i := range keys {
		keys[i] = "left/" + strconv.Itoa(i)
	}
	if err := a.client.Wait(ctx, keys...); err != nil {
		a.logf("closing the store before every node left: %v; missing: %s", err, a.missing(keys))
	}
}

func (a *agent) closeStore() {
	if a.client != nil {
		a.client.Close()
	}
	if a.server != nil {
		a.server.Close()
	}
}

// rendezvous forms the world of attempt restart: each node announces its rank
// count; once all nodes have, each knows its ranks' global numbers.
func (a *agent) rendezvous(ctx context.Context, restart int, storeAddr string) (World, error) {
	w := World{NNodes: a.c.NNodes, MasterAddr: a.c.StoreHost, StoreAddr: storeAddr}
	if a.c.NNodes == 1 {
		port, err := freePort(a.c.StoreHost)
		if err != nil {
			return w, err
		}
		w.Size, w.MasterPort = a.c.NProc, port
		return w, nil
	}
	ctx, cancel := context.WithTimeout(ctx, a.c.RdzvTimeout)
	defer cancel()
	pfx := fmt.Sprintf("rdzv/%d/", restart)
	mine := []byte(strconv.Itoa(a.c.NProc))
	if cur, ok, err := a.client.CompareAndSet(ctx, pfx+"node/"+strconv.Itoa(a.c.NodeRank), nil, mine); err != nil {
		return w, fmt.Errorf("rendezvous: %w", err)
	} else if !ok {
		return w, fmt.Errorf("rendezvous: node rank %d joined twice (the other has %s ranks): give each agent its own --node-rank", a.c.NodeRank, cur)
	}
	if a.c.NodeRank == 0 {
		port, err := freePort("")
		if err != nil {
			return w, err
		}
		if err := a.client.Set(ctx, pfx+"master-port", []byte(strconv.Itoa(port))); err != nil {
			return w, fmt.Errorf("rendezvous: %w", err)
		}
	}
	keys := []string{pfx + "master-port"}
	for i := range a.c.NNodes {
		keys = append(keys, pfx+"node/"+strconv.Itoa(i))
	}
	start := time.Now()
	if err := a.client.Wait(ctx, keys...); err != nil {
		return w, fmt.Errorf("rendezvous of %d nodes at %s (restart %d): %w; missing: %s",
			a.c.NNodes, storeAddr, restart, err, a.missing(keys))
	}
	for i := range a.c.NNodes {
		v, err := a.client.Get(ctx, keys[i+1])
		if err != nil {
			return w, fmt.Errorf("rendezvous: %w", err)
		}
		n, err := strconv.Atoi(string(v))
		if err != nil || n < 1 {
			return w, fmt.Errorf("rendezvous: node %d announced %q ranks", i, v)
		}
		if i < a.c.NodeRank {
			w.FirstRank += n
		}
		w.Size += n
	}
	v, err := a.client.Get(ctx, keys[0])
	if err != nil {
		return w, fmt.Errorf("rendezvous: %w", err)
	}
	if w.MasterPort, err = strconv.Atoi(string(v)); err != nil {
		return w, fmt.Errorf("rendezvous: master port %q: %w", v, err)
	}
	if restart == 0 {
		a.logf("joined a world of %d ranks on %d nodes in %v; this node's ranks are %d..%d",
			w.Size, a.c.NNodes, time.Since(start).Round(time.Millisecond), w.FirstRank, w.FirstRank+a.c.NProc-1)
	}
	return w, nil
}

// missing lists which of keys are absent, for a rendezvous timeout message.
func (a *agent) missing(keys []string) string {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	var out []string
	for _, k := range keys {
		qctx, qcancel := context.WithTimeout(ctx, 10*time.Millisecond)
		if _, err := a.client.Get(qctx, k); err != nil {
			out = append(out, k)
		}
		qcancel()
	}
	return fmt.Sprint(out)
}

// freePort finds a port that is free on host now, for the ranks' MASTER_PORT.
func freePort(host string) (int, error) {
	ln, err := net.Listen("tcp", joinHostPort(host, 0))
	if err != nil {
		return 0, fmt.Errorf("find a free port for MASTER_PORT: %w", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// attempt runs the local group once. It returns nil when every rank on every
// node succeeded, else the attempt's first failure.
func (a *agent) attempt(ctx context.Context, w World, restart int) (*failure, error) {
	start := time.Now()
	failKey := fmt.Sprintf("attempt/%d/failed", restart)
	g, err := startGroup(a.c, a.p, w, restart, a.out, a.err)
	if err != nil {
		if a.client != nil {
			// The other nodes must not wait for ranks that will never start.
			b, _ := json.Marshal(a.agentFailure(1, fmt.Sprintf("node %d could not start its ranks: %v", a.c.NodeRank, err), start))
			pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			a.client.CompareAndSet(pctx, failKey, nil, b)
			cancel()
		}
		return nil, err
	}
	// Other nodes' failures arrive through the store.
	wctx, cancelWatch := context.WithCancel(ctx)
	defer cancelWatch()
	remote := make(chan *failure, 1)
	if a.client != nil {
		go func() {
			v, err := a.client.Get(wctx, failKey)
			if wctx.Err() != nil {
				return
			}
			f := &failure{Node: -1, Rank: -1, Code: 1}
			if err != nil {
				f.How, f.Final = fmt.Sprintf("lost the rendezvous store: %v", err), true
			} else if err := json.Unmarshal(v, f); err != nil {
				f.How = fmt.Sprintf("unreadable failure record %q: %v", v, err)
			}
			remote <- f
		}()
	}
	var first *failure
	publish := func(f *failure) {
		if a.client == nil {
			first = f
			return
		}
		// The first record wins on every node.
		b, _ := json.Marshal(f)
		pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		cur, _, err := a.client.CompareAndSet(pctx, failKey, nil, b)
		first = f
		if err == nil {
			var won failure
			if json.Unmarshal(cur, &won) == nil {
				first = &won
			}
		}
	}
	var kill <-chan time.Time
	stopping := false
	stopAll := func() {
		if !stopping {
			stopping = true
			g.stop(syscall.SIGTERM)
			kill = time.After(a.c.GracePeriod)
		}
	}
	// Sample soon after the start (short ranks), then every sampleEvery.
	firstSample := time.After(10 * time.Millisecond)
	ticker := time.NewTicker(sampleEvery)
	defer ticker.Stop()
	ctxDone := ctx.Done()
	for live := len(g.ranks); live > 0; {
		select {
		case i := <-g.exits:
			live--
			r := g.ranks[i]
			if r.failed() && first == nil {
				r.drained(time.Second) // its last stderr lines belong in the summary
				publish(a.rankFailure(r, start))
				stopAll()
			}
		case s := <-a.sigs:
			sig := s.(syscall.Signal)
			if !stopsJob(sig) {
				g.signal(sig)
				a.logf("forwarded %s to the ranks", SignalName(sig))
				continue
			}
			if stopping {
				g.stop(syscall.SIGKILL)
				continue
			}
			a.logf("received %s: forwarding it to the ranks and stopping", SignalName(sig))
			stopping = true
			g.stop(sig)
			kill = time.After(a.c.GracePeriod)
			if first == nil {
				publish(a.agentFailure(128+int(sig), "pplaunch received "+SignalName(sig), start))
			}
		case <-ctxDone:
			ctxDone = nil
			if first == nil {
				publish(a.agentFailure(128+int(syscall.SIGTERM), "pplaunch was cancelled", start))
			}
			stopAll()
		case f := <-remote:
			if first == nil {
				first = f
				a.logf("node %d failed (%s): stopping this node's ranks", f.Node, f.How)
				stopAll()
			}
		case <-kill:
			g.stop(syscall.SIGKILL)
		case <-firstSample:
			g.sample()
		case <-ticker.C:
			g.sample()
		}
	}
	if stopping {
		// The job was stopped: what the ranks left behind goes too, even
		// processes they started after the SIGTERM (a trap, a loop that had
		// not yet reached its next fork).
		g.stop(syscall.SIGKILL)
	}
	g.wait()
	if first == nil && a.client != nil {
		first = a.awaitNodes(ctx, restart, remote)
	}
	a.summary(first, g, start, restart)
	return first, nil
}

// awaitNodes announces this node's success and waits for every other node's,
// or for a failure anywhere (the group then restarts on every node).
func (a *agent) awaitNodes(ctx context.Context, restart int, remote <-chan *failure) *failure {
	pfx := fmt.Sprintf("attempt/%d/done/", restart)
	keys := make([]string, a.c.NNodes)
	for i := range keys {
		keys[i] = pfx + strconv.Itoa(i)
	}
	dctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if err := a.client.Set(dctx, keys[a.c.NodeRank], nil); err != nil {
		return &failure{Node: a.c.NodeRank, Rank: -1, Code: 1, How: err.Error(), Final: true}
	}
	done := make(chan error, 1)
	go func() { done <- a.client.Wait(dctx, keys...) }()
	for {
		select {
		case err := <-done:
			if err != nil {
				return &failure{Node: a.c.NodeRank, Rank: -1, Code: 1, How: "waiting for the other nodes: " + err.Error(), Final: true}
			}
			return nil
		case f := <-remote:
			return f
		case s := <-a.sigs:
			sig := s.(syscall.Signal)
			if stopsJob(sig) {
				f := a.agentFailure(128+int(sig), "pplaunch received "+SignalName(sig)+" while waiting for the other nodes", time.Now())
				b, _ := json.Marshal(f)
				a.client.CompareAndSet(dctx, fmt.Sprintf("attempt/%d/failed", restart), nil, b)
				return f
			}
		}
	}
}

func (a *agent) rankFailure(r *rank, start time.Time) *failure {
	return &failure{
		Node: a.c.NodeRank, Host: a.host, Rank: r.global, Local: r.local, Code: r.exitCode(), How: r.how(),
		Pid: r.pid, After: r.end.Sub(start).Round(time.Millisecond).String(), Stderr: r.stderr.get(),
	}
}

func (a *agent) agentFailure(code int, how string, start time.Time) *failure {
	return &failure{Node: a.c.NodeRank, Host: a.host, Rank: -1, Code: code, How: how, Pid: os.Getpid(),
		After: time.Since(start).Round(time.Millisecond).String(), Final: true}
}
