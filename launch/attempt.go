package launch

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strconv"
	"syscall"
	"time"

	"github.com/pplaunch/pplaunch/contract"
)

// attempt runs the local group once. It returns nil when every rank on every
// node succeeded, else the attempt's failure (the root cause). It only turns
// what happens into events for the supervisor (decide.go) and carries out
// the supervisor's actions. (Its length is one select loop whose cases are
// each a line or two: the events, in one place.)
func (a *agent) attempt(ctx context.Context, w World, restart int) (*failure, error) {
	start := time.Now()
	failKey := fmt.Sprintf("attempt/%d/failed", restart)
	g, err := startGroup(a.c, a.p, w, restart, a.runDir, a.out, a.err, a.takeKeeper(), a.logf)
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
	sv := newSupervisor(a.c, a.host, w, start)
	sv.pid = os.Getpid()
	sv.growable = a.c.NodeRank == 0 && growNow(len(w.Members), a.c.NNodes, restart, a.c.MaxRestarts)
	events := make(chan event, 16) // from the goroutines below
	wctx, cancelWatch := context.WithCancel(ctx)
	defer cancelWatch()
	if a.client != nil {
		go a.watchFailure(wctx, failKey, events)
	}
	// Sample soon after the start (short ranks), then every sampleEvery.
	firstSample := time.After(10 * time.Millisecond)
	ticker := time.NewTicker(sampleEvery)
	defer ticker.Stop()
	wake := time.NewTimer(time.Hour)
	wake.Stop()
	var wakeAt time.Time
	ctxDone := ctx.Done()
	for !sv.done() {
		var evs []event
		select {
		case i := <-g.exits:
			evs = a.exitEvents(g, g.ranks[i], sv)
		case s := <-a.sigs:
			evs = []event{{kind: evSignal, at: time.Now(), sig: s.(syscall.Signal)}}
		case <-ctxDone:
			ctxDone = nil
			evs = []event{{kind: evCancel, at: time.Now()}}
		case n := <-a.lost:
			evs = []event{{kind: evNodeLost, at: time.Now(), node: n}}
		case j := <-a.joins: // node 0 of an elastic job
			a.pending = append(a.pending, j)
			evs = []event{{kind: evJoin, at: time.Now(), node: j.Node}}
		case <-a.susp.changed:
			evs = []event{{kind: evSuspensions, at: time.Now(), susp: a.susp.now()}}
		case e := <-events:
			if e.kind == evRemote && !sv.stopping {
				evs = a.snapshots(g, nil, false) // what the ranks do now may be what the record is about
			}
			evs = append(evs, e)
		case now := <-wake.C:
			wakeAt = time.Time{}
			evs = []event{{kind: evTick, at: now}}
		case <-firstSample:
			g.sample()
		case <-ticker.C:
			g.sample()
		}
		for len(evs) > 0 {
			e := evs[0]
			evs = evs[1:]
			for _, act := range sv.on(e) {
				if act.kind == actWake {
					if wakeAt.IsZero() || act.at.Before(wakeAt) {
						wakeAt = act.at
						wake.Reset(time.Until(act.at))
					}
					continue
				}
				evs = append(evs, a.carryOut(ctx, act, g, failKey)...)
			}
		}
	}
	if sv.stopping {
		g.stop(syscall.SIGKILL) // nothing is left running; a no-op unless the kill timer had not fired
	}
	g.wait()
	first := sv.outcome()
	if first == nil && a.client != nil {
		cancelWatch()
		first = a.awaitNodes(ctx, restart)
	}
	if first != nil && first.Rank >= 0 && first.Node == a.c.NodeRank && first.Rank-w.FirstRank < len(g.ranks) {
		// Its last stderr lines belong in the summary.
		if tl := g.ranks[first.Rank-w.FirstRank].stderr.get(); len(tl) > 0 {
			first.Stderr = tl
		}
	}
	if first != nil && first.Lost {
		a.gone[first.Node] = true
	}
	for n := range sv.lostNodes {
		a.gone[n] = true
	}
	a.summary(first, g, start, restart)
	return first, nil
}

// exitEvents are the events of rank r's end: first what it reported and (at
// the group's first failure) what every live rank was doing, then the exit.
func (a *agent) exitEvents(g *group, r *rank, sv *supervisor) []event {
	r.drained(time.Second) // its last stderr lines belong in the summary
	var evs []event
	failed := r.code != 0 || r.sig != 0
	if failed && !sv.stopping {
		// Before anything is stopped: what the other ranks report and do now
		// decides who is to blame.
		evs = a.snapshots(g, r, true)
	}
	if r.progress != "" {
		if _, _, rep, has := readProgress(r.progress); has {
			code := r.code
			if r.sig != 0 {
				code = 128 + int(r.sig)
			}
			if r.stoppedByAgent() {
				code = 0 // the stop's code, not the failure's
			}
			evs = append([]event{{kind: evReport, at: r.end, rank: r.global, local: r.local, pid: r.pid, rep: rep, code: code}}, evs...)
		}
	}
	return append(evs, event{kind: evExit, at: r.end, rank: r.global, local: r.local, pid: r.pid,
		code: r.code, sig: r.sig, stopped: r.stoppedByAgent()})
}

// snapshots are the progress of every rank but skip: what each live rank is
// doing (and whether it is stopped), and with reports, what each reported.
func (a *agent) snapshots(g *group, skip *rank, reports bool) []event {
	g.mu.Lock()
	defer g.mu.Unlock()
	var evs []event
	for _, o := range g.ranks {
		if o == skip || o.progress == "" {
			continue
		}
		action, since, rep, has := readProgress(o.progress)
		if has && reports {
			evs = append(evs, event{kind: evReport, at: time.Now(), rank: o.global, local: o.local, pid: o.pid, rep: rep})
		}
		if !o.exited {
			snap := snapshot{Action: action, Since: since, Pid: o.pid}
			if procStopped(o.pid) {
				snap.State = "stopped"
			}
			evs = append(evs, event{kind: evSnapshot, at: time.Now(), rank: o.global, snap: snap})
		}
	}
	return evs
}

// carryOut does one action of the supervisor; it returns the events that
// result (the record that won the store).
func (a *agent) carryOut(ctx context.Context, act action, g *group, failKey string) []event {
	switch act.kind {
	case actStop:
		g.stop(act.sig)
	case actKill:
		g.stop(syscall.SIGKILL)
	case actForward:
		g.signal(act.sig)
	case actLog:
		a.logf("%s", act.text)
	case actSuspend:
		a.logf("received SIGTSTP: suspending the ranks and this agent (SIGCONT resumes them)")
		if a.client != nil {
			a.announceSuspension(ctx) // the other nodes hold their ranks first
		}
		g.suspend()
		syscall.Kill(os.Getpid(), syscall.SIGSTOP)
	case actResume:
		g.signal(syscall.SIGCONT)
		a.logf("received SIGCONT: resumed the ranks")
		if a.client != nil {
			a.announceResumption(ctx)
		}
	case actHold:
		g.suspend()
	case actAck:
		a.ackSuspension(ctx, act.node, act.episode)
	case actRelease:
		g.signal(syscall.SIGCONT)
	case actPublish:
		// The first record wins on every node.
		b, _ := json.Marshal(act.f)
		pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		won := act.f
		if cur, _, err := a.client.CompareAndSet(pctx, failKey, nil, b); err == nil {
			var f failure
			if json.Unmarshal(cur, &f) == nil {
				won = &f
			}
		}
		return []event{{kind: evAgreed, at: time.Now(), f: won}}
	}
	return nil
}

// watchFailure feeds the job's failure record (another node's, or our own
// once published) as an event; losing the store is a failure too.
func (a *agent) watchFailure(ctx context.Context, failKey string, events chan<- event) {
	v, err := a.client.Get(ctx, failKey)
	if ctx.Err() != nil {
		return
	}
	f := &failure{Node: -1, Rank: -1, Code: 1}
	if err != nil {
		f.How, f.Final = fmt.Sprintf("lost the rendezvous store: %v", err), true
	} else if err := json.Unmarshal(v, f); err != nil {
		f.How = fmt.Sprintf("unreadable failure record %q: %v", v, err)
	}
	select {
	case events <- event{kind: evRemote, at: time.Now(), f: f}:
	case <-ctx.Done():
	}
}

// awaitNodes announces this node's success and waits for every other node's,
// or for a failure anywhere (the group then restarts on every node). It waits
// at most --rdzv-timeout (how long agents wait for each other), and a lost
// node (heartbeat) ends the wait at once.
func (a *agent) awaitNodes(ctx context.Context, restart int) *failure {
	pfx := fmt.Sprintf("attempt/%d/done/", restart)
	failKey := fmt.Sprintf("attempt/%d/failed", restart)
	var keys []string
	for _, n := range a.nodeIDs() {
		keys = append(keys, pfx+strconv.Itoa(n))
	}
	dctx, cancel := context.WithTimeout(ctx, a.c.RdzvTimeout)
	defer cancel()
	start := time.Now()
	if err := a.client.Set(dctx, pfx+strconv.Itoa(a.c.NodeRank), nil); err != nil {
		return &failure{Node: a.c.NodeRank, Rank: -1, Code: 1, How: err.Error(), Final: true}
	}
	events := make(chan event, 1)
	go a.watchFailure(dctx, failKey, events)
	done := make(chan error, 1)
	go func() { done <- a.client.Wait(dctx, keys...) }()
	publish := func(f *failure) *failure {
		b, _ := json.Marshal(f)
		pctx, pcancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer pcancel()
		if cur, _, err := a.client.CompareAndSet(pctx, failKey, nil, b); err == nil {
			var won failure
			if json.Unmarshal(cur, &won) == nil {
				return &won
			}
		}
		return f
	}
	for {
		select {
		case err := <-done:
			if err == nil {
				return nil
			}
			how := fmt.Sprintf("this node's ranks all succeeded, but the other nodes did not finish within --rdzv-timeout %v: %v; missing: %s",
				a.c.RdzvTimeout, err, a.missing(keys))
			if ctx.Err() != nil {
				how = "waiting for the other nodes: " + err.Error()
			}
			return publish(&failure{Node: a.c.NodeRank, Host: a.host, Rank: -1, Code: 1, How: how, Pid: os.Getpid(),
				After: time.Since(start).Round(time.Millisecond).String(), Final: true})
		case e := <-events:
			return e.f
		case n := <-a.lost:
			if a.c.Elastic() && !slices.Contains(a.nodeIDs(), n) {
				break // not of this world
			}
			return publish(&failure{Node: n, Rank: -1, Code: 1, Final: !a.c.Elastic(), Lost: true,
				How: lostHow(n, a.c.Etcd != nil)})
		case s := <-a.sigs:
			sig := s.(syscall.Signal)
			if stopsJob(sig) {
				return publish(a.agentFailure(128+int(sig), "pplaunch received "+contract.SignalName(sig)+" while waiting for the other nodes", time.Now()))
			}
		}
	}
}
