package launch

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/pplaunch/pplaunch/contract"
	"github.com/pplaunch/pplaunch/store"
	"github.com/pplaunch/pplaunch/store/etcdstore"
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
	Lost   bool     `json:"lost"`   // node Node was lost (no heartbeat)
	Join   bool     `json:"join"`   // not a failure: node Node asks to join an elastic job, the world re-forms
	Stderr []string `json:"stderr"` // its last lines
}

// Forwarded are the signals the agent handles: it forwards them to its ranks;
// SIGINT, SIGTERM and SIGHUP also stop the job; SIGTSTP (Ctrl-Z) suspends
// the ranks, then the agent, and SIGCONT resumes them (as mpirun does).
var Forwarded = []os.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGUSR1, syscall.SIGUSR2,
	syscall.SIGTSTP, syscall.SIGCONT}

func stopsJob(s syscall.Signal) bool {
	return s == syscall.SIGINT || s == syscall.SIGTERM || s == syscall.SIGHUP
}

type agent struct {
	c        Config
	p        Program
	out, err *console
	host     string
	server   *store.Server // node 0 only
	client   store.Store   // multi-node: the agents' namespace (the store on node 0, or etcd)
	sigs     <-chan os.Signal
	formed   bool             // a world formed: the other nodes use the store until they leave
	runDir   string           // the ranks' progress files
	lost     chan int         // nodes whose heartbeat stopped (heartbeat.go)
	susp     *suspensions     // other nodes suspended by job control (heartbeat.go)
	gone     map[int]bool     // nodes known lost: they will not leave
	refused  bool             // the rendezvous was refused (flags differ)
	ahead    chan aheadKeeper // the first attempt's keeper, started while the world forms
	etcd     *etcdstore.Store // client, when the agents meet in etcd (rdzv_etcd.go)

	// An elastic job's (elastic.go): the current members (the heartbeat
	// reads them), node 0's join requests and those still waiting for a
	// place, the first round's size, and this node's last world.
	mu      sync.Mutex
	members []int
	joins   chan joinRequest
	pending []joinRequest
	base    int
	last    World
}

// Run is the agent: it forms the world with the other nodes' agents, runs this
// node's ranks, supervises them and restarts the group up to c.MaxRestarts
// times. sigs delivers the signals to forward (see Forwarded); cancelling ctx
// stops the job as SIGTERM does. It returns the process exit code: 0, the first
// failure's exit code, or 128+signal.
func Run(ctx context.Context, c Config, p Program, sigs <-chan os.Signal) int {
	a := &agent{c: c, p: p, out: &console{w: p.Stdout}, err: &console{w: p.Stderr}, sigs: sigs, lost: make(chan int, c.NNodes), susp: newSuspensions(), gone: map[int]bool{}}
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
	a.startKeeperAhead()
	defer a.dropKeeper()
	var storeAddr string
	sig, err := a.untilSignal(ctx, func(ctx context.Context) (err error) {
		storeAddr, err = a.openStore(ctx)
		return err
	})
	defer a.closeStore()
	if sig != 0 {
		return 128 + int(sig), fmt.Errorf("received %s while joining the rendezvous", contract.SignalName(sig))
	}
	if err != nil {
		return 1, err
	}
	defer a.leave()
	if a.runDir, err = makeRunDir(a.c.RunID); err != nil {
		return 1, err
	}
	defer os.RemoveAll(a.runDir)
	first, err := a.firstRound(ctx)
	if err != nil {
		return 1, err
	}
	for restart := first; ; restart++ {
		var w World
		sig, err := a.untilSignal(ctx, func(ctx context.Context) (err error) {
			w, err = a.rendezvous(ctx, restart, storeAddr)
			return err
		})
		if sig != 0 {
			return 128 + int(sig), fmt.Errorf("received %s during the rendezvous", contract.SignalName(sig))
		}
		if err != nil {
			return 1, err
		}
		if !a.formed && a.client != nil {
			hctx, stop := context.WithCancel(ctx)
			defer stop()
			go a.watchNodes(hctx)
		}
		a.formed = true
		f, err := a.attempt(ctx, w, restart)
		if se := (*startError)(nil); errors.As(err, &se) {
			return se.code, err
		}
		if err != nil {
			return 1, err
		}
		again, code := nextAttempt(f, restart, a.c.MaxRestarts)
		if !again {
			return code, nil
		}
		if a.c.Elastic() && (f.Lost || f.Join) {
			a.logf("re-forming the world (restart %d of %d): %s", restart+1, a.c.MaxRestarts, f.How)
			continue
		}
		a.logf("restarting the group on every node (restart %d of %d)", restart+1, a.c.MaxRestarts)
	}
}

// firstRound is the round this agent's first attempt is: 0, except for a
// node that joins an elastic job (askToJoin). Node 0 of an elastic job
// starts watching for join requests.
func (a *agent) firstRound(ctx context.Context) (int, error) {
	if !a.c.Elastic() {
		return 0, nil
	}
	if a.c.NodeRank == 0 {
		a.joins = make(chan joinRequest, 1)
		go a.watchJoins(ctx)
		return 0, nil
	}
	var round int
	sig, err := a.untilSignal(ctx, func(ctx context.Context) (err error) {
		round, err = a.askToJoin(ctx)
		return err
	})
	if sig != 0 {
		return 0, fmt.Errorf("received %s while asking to join", contract.SignalName(sig))
	}
	return round, err
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
			sig := s.(syscall.Signal)
			if stopsJob(sig) {
				cancel()
				<-done
				return sig, nil
			}
			if sig == syscall.SIGTSTP && a.c.NNodes == 1 {
				syscall.Kill(os.Getpid(), syscall.SIGSTOP) // no ranks yet: only this agent to suspend
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
		if err := a.dialStore(ctx, addr); err != nil {
			return "", err
		}
	}
	if a.c.Etcd != nil && a.c.NNodes > 1 {
		return a.shareStoreAddr(ctx, addr)
	}
	return addr, nil
}

// dialStore connects the agent to the store at addr, in the agents' namespace.
func (a *agent) dialStore(ctx context.Context, addr string) error {
	if a.c.Etcd != nil {
		return a.dialEtcd(ctx)
	}
	dctx, cancel := context.WithTimeout(ctx, a.c.RdzvTimeout)
	defer cancel()
	cl, err := store.Dial(dctx, addr, a.c.Token, "agent/")
	if err != nil {
		return fmt.Errorf("node %d joins the rendezvous at %s: %w", a.c.NodeRank, addr, err)
	}
	a.client = cl
	return nil
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
	var keys []string
	for _, i := range a.nodeIDs() {
		if !a.gone[i] {
			keys = append(keys, "left/"+strconv.Itoa(i))
		}
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
		if a.refused {
			// The other agents must read why before the store goes; they
			// leave as soon as they have.
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			a.server.WaitIdle(ctx)
			cancel()
		}
		a.server.Close()
	}
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

func (a *agent) agentFailure(code int, how string, start time.Time) *failure {
	return &failure{Node: a.c.NodeRank, Host: a.host, Rank: -1, Code: code, How: how, Pid: os.Getpid(),
		After: time.Since(start).Round(time.Millisecond).String(), Final: true}
}
