package launch

import (
	"context"
	"fmt"
	"maps"
	"strconv"
	"sync"
	"time"
)

// Agents of a job on several nodes heartbeat through the store: each adds 1
// to its counter "hb/NODE" every heartbeatInterval and reads the others'. A
// node whose counter has not moved for heartbeatMisses reads in a row is lost
// (its agent was killed, its machine went down): it is named as the root
// cause within heartbeatDeadline, before the consequences on the other nodes
// (their ranks seeing their peers vanish) are taken for the cause.
//
// A node suspended by job control (Ctrl-Z to its agent) is not lost: its
// agent counts "susp/NODE" up before it stops (odd: suspended) and up again
// once continued (even: running). The other agents, reading it with the
// beat, suspend their own ranks while any node is suspended, since the job
// cannot step without it, and count no misses against it; each acknowledges
// a suspension by counting "suspack/NODE/ITS-NODE" up once its ranks are
// stopped, and the suspending agent stops only once all have (or after
// heartbeatDeadline): had it stopped first, a node hosting the store would
// leave the others unable to read why it went quiet.
//
// heartbeatInterval: half a second costs each node two small store requests
// per node and second, nothing beside a training step, and keeps detection
// within a few seconds. heartbeatMisses: 6 (3 s) rides out a store host or
// agent that is not scheduled for a while (an overloaded node, a long GC
// pause, a burst of checkpoint I/O) without calling a live node lost.
const (
	heartbeatInterval = 500 * time.Millisecond
	heartbeatMisses   = 6
	heartbeatDeadline = heartbeatInterval * heartbeatMisses
)

// lostHow says how node was found lost: its heartbeat stood still in the
// built-in store, or (etcd) its member lease lapsed. Both take
// heartbeatDeadline: the lease's time to live is that deadline.
func lostHow(node int, etcd bool) string {
	if etcd {
		return fmt.Sprintf("node %d was lost: its etcd member lease lapsed (its agent kept it alive for no %v)", node, heartbeatDeadline)
	}
	return fmt.Sprintf("node %d was lost: its agent sent no heartbeat for %v", node, heartbeatDeadline)
}

// nodeWatch is what one agent knows of another node from the beats.
type nodeWatch struct {
	last      int64 // its heartbeat counter at the last read
	misses    int   // reads in a row it has not moved
	suspended bool
	lost      bool
}

// beatNews is what a beat read of a node changed.
type beatNews int

const (
	newsNone beatNews = iota
	newsLost
	newsSuspended
	newsResumed
)

// judge is the heartbeat's decision for one node at one read: its
// heartbeat counter hb and suspension counter susp (odd: suspended).
func (w *nodeWatch) judge(hb, susp int64) beatNews {
	if w.lost {
		return newsNone
	}
	if suspended := susp%2 == 1; suspended != w.suspended {
		w.suspended, w.last, w.misses = suspended, hb, 0
		if suspended {
			return newsSuspended
		}
		return newsResumed
	}
	if hb != w.last || w.suspended {
		w.last, w.misses = hb, 0
		return newsNone
	}
	if w.misses++; w.misses >= heartbeatMisses {
		w.lost = true
		return newsLost
	}
	return newsNone
}

// suspensions are the other nodes suspended now, as the beats read them:
// node → the how-manieth suspension of it this is. changed has a value
// whenever they changed since it was last read (coalescing: the heartbeat
// never waits on the attempt to take them).
type suspensions struct {
	mu      sync.Mutex
	nodes   map[int]int64
	changed chan struct{}
}

func newSuspensions() *suspensions {
	return &suspensions{nodes: map[int]int64{}, changed: make(chan struct{}, 1)}
}

func (s *suspensions) set(node int, suspended bool, episode int64) {
	s.mu.Lock()
	if suspended {
		s.nodes[node] = episode
	} else {
		delete(s.nodes, node)
	}
	s.mu.Unlock()
	select {
	case s.changed <- struct{}{}:
	default:
	}
}

// now returns a copy of the suspended nodes.
func (s *suspensions) now() map[int]int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.nodes)
}

// heartbeat beats for this node and watches the others until ctx ends; it
// sends each lost node once on lost, and records each suspension and
// resumption of another node in susp.
func (a *agent) heartbeat(ctx context.Context, lost chan<- int, susp *suspensions) {
	t := time.NewTicker(heartbeatInterval)
	defer t.Stop()
	nodes := map[int]*nodeWatch{} // by node name (an elastic job's members change)
	for {
		rctx, cancel := context.WithTimeout(ctx, heartbeatInterval)
		_, err := a.client.Add(rctx, "hb/"+strconv.Itoa(a.c.NodeRank), 1)
		// Without our own beat through, the store is what is slow (or its
		// host is suspended): judge no one.
		for _, n := range a.nodeIDs() {
			if err != nil {
				break
			}
			if nodes[n] == nil {
				nodes[n] = &nodeWatch{last: -1}
			}
			if n == a.c.NodeRank || nodes[n].lost {
				continue
			}
			hb, herr := a.client.Add(rctx, "hb/"+strconv.Itoa(n), 0)
			s, serr := a.client.Add(rctx, "susp/"+strconv.Itoa(n), 0)
			if herr != nil || serr != nil {
				break
			}
			switch nodes[n].judge(hb, s) {
			case newsLost:
				select {
				case lost <- n:
				case <-ctx.Done():
				}
			case newsSuspended, newsResumed:
				susp.set(n, nodes[n].suspended, (s+1)/2)
			}
		}
		cancel()
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// announceSuspension tells the other nodes this one is about to stop (job
// control) and waits, at most heartbeatDeadline, until every node not known
// lost has stopped its ranks.
func (a *agent) announceSuspension(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, heartbeatDeadline)
	defer cancel()
	me := strconv.Itoa(a.c.NodeRank)
	v, err := a.client.Add(ctx, "susp/"+me, 1)
	if err != nil || v%2 == 0 {
		return
	}
	episode := (v + 1) / 2
	for _, n := range a.nodeIDs() {
		if n == a.c.NodeRank || a.gone[n] {
			continue
		}
		for {
			acked, err := a.client.Add(ctx, fmt.Sprintf("suspack/%s/%d", me, n), 0)
			if err != nil {
				a.logf("node %d did not confirm within %v that its ranks are suspended: %v", n, heartbeatDeadline, err)
				break
			}
			if acked >= episode {
				break
			}
			select {
			case <-ctx.Done():
			case <-time.After(heartbeatInterval / 10): // polling the store's counter: nothing to wait on
			}
		}
	}
}

// announceResumption tells the other nodes this one runs again.
func (a *agent) announceResumption(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, heartbeatDeadline)
	defer cancel()
	if _, err := a.client.Add(ctx, "susp/"+strconv.Itoa(a.c.NodeRank), 1); err != nil {
		a.logf("could not tell the other nodes that this node resumed: %v", err)
	}
}

// ackSuspension tells node that this node's ranks are stopped for its
// episode-th suspension (the counter is brought up to it: a suspension that
// came and went between two beats was never seen, nor acknowledged).
func (a *agent) ackSuspension(ctx context.Context, node int, episode int64) {
	ctx, cancel := context.WithTimeout(ctx, heartbeatDeadline)
	defer cancel()
	key := fmt.Sprintf("suspack/%d/%d", node, a.c.NodeRank)
	if cur, err := a.client.Add(ctx, key, 0); err == nil && cur < episode {
		a.client.Add(ctx, key, episode-cur)
	}
}
