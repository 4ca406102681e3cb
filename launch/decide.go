package launch

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/pplaunch/pplaunch/contract"
)

// The agent's decisions (when to stop the group, when to tell the other
// nodes, which failure is the root cause, whether to restart) are made here,
// without effects: the process code (attempt) turns what happens into events,
// feeds them to a supervisor and carries out the actions it returns. Time only
// enters through the events, so every decision is table-tested without
// processes (decide_test.go).

// settleWindow is how far apart two failures may be stamped and still be
// ordered by kind rather than by time. A consequence can be stamped before its
// cause: a rank that failed first closes its links (its peers stamp "peer
// gone" at once) and only then writes its own report; a crashed rank's exit
// is stamped when its keeper reaps it. Both lags are well under a second; two
// failures further apart than this are independent, and the earlier one is
// the root cause.
const settleWindow = time.Second

// remoteWait is how long a consequence that may have its cause on another
// node waits before this node publishes it: long enough for that node's own
// failure record, or for its lost heartbeat to be noticed (up to
// heartbeatDeadline plus one interval after its last beat; twice that, so a
// busy machine's late ticks do not make the consequence the root cause).
const remoteWait = 2*heartbeatDeadline + settleWindow

// evKind is what happened.
type evKind int

const (
	evExit        evKind = iota // a local rank ended (code, sig, stopped)
	evReport                    // a local rank's own account of its failure (rep)
	evSnapshot                  // what a live local rank was doing (snap)
	evNodeLost                  // node's agent stopped heartbeating
	evRemote                    // the job's failure record, from the store (f)
	evAgreed                    // the record that won the store after this node published (f)
	evSignal                    // the agent received sig
	evCancel                    // the agent's context ended
	evTick                      // a wake-up asked for by actWake
	evSuspensions               // the other nodes suspended by job control changed (susp)
	evJoin                      // node asks to join an elastic job (node 0 only)
)

// event is one input of the supervisor.
type event struct {
	kind    evKind
	at      time.Time
	rank    int // global rank (evExit, evReport, evSnapshot)
	local   int
	pid     int
	code    int            // exit code; -1 when a signal ended it
	sig     syscall.Signal // the signal that ended the rank, or that the agent received
	stopped bool           // the rank ended after pplaunch had signalled it to stop
	rep     report
	snap    snapshot
	node    int
	f       *failure
	susp    map[int]int64 // suspended node → its episode (evSuspensions)
}

// report is a rank's own account of its failure, from its progress file.
type report = contract.Failure

// Report classes, as ranks write them (contract's Fail classes).
const (
	repError    = contract.FailError    // its own failure
	repTimeout  = contract.FailTimeout  // it waited for Peer until the deadline
	repPeerGone = contract.FailPeerGone // Peer closed or aborted the link
	repRelayed  = contract.FailRelayed  // it saw another rank's reported failure
	repStopped  = contract.FailStopped  // a signal stopped it (pplaunch stopping the group)
)

// snapshot is what a live rank was doing when the group began to stop.
type snapshot struct {
	Action string    // its last published action ("step 1 1F2"), "" if none
	Since  time.Time // when it began it
	State  string    // "stopped" when its process was stopped by a signal, else ""
	Pid    int
}

// actKind is what the process code must do.
type actKind int

const (
	actStop    actKind = iota // signal every live rank's group with sig (then SIGCONT)
	actKill                   // SIGKILL every rank's group
	actPublish                // store f as the job's failure record (first wins), then feed evAgreed
	actForward                // forward sig to the ranks
	actSuspend                // stop the ranks' groups, then the agent itself
	actResume                 // SIGCONT the ranks' groups
	actWake                   // feed evTick at (or soon after) at
	actLog                    // print text
	actHold                   // stop the ranks' groups while other nodes are suspended (not the agent)
	actAck                    // tell node its episode-th suspension holds this node's ranks
	actRelease                // SIGCONT the ranks' groups held by actHold
)

type action struct {
	kind    actKind
	sig     syscall.Signal
	f       *failure
	at      time.Time
	text    string
	node    int   // actAck
	episode int64 // actAck
}

// supervisor decides for one attempt on one node.
type supervisor struct {
	node, firstRank, nproc int
	host                   string
	pid                    int // the agent's, for its own failures
	start                  time.Time
	multi                  bool          // other nodes take part: failures go through the store
	grace                  time.Duration // SIGTERM to SIGKILL
	remoteWait             time.Duration // how long a consequence that blames another node waits for that node's news

	live      map[int]bool // local ranks still running
	cands     map[int]*candidate
	agentFail *candidate // the node itself (signal, lost node)
	reports   map[int]report
	snaps     map[int]snapshot

	failedAt   time.Time // first failure seen
	stopping   bool
	stopAt     time.Time
	killed     bool
	published  bool
	winner     *failure      // the job's failure record (multi-node)
	suspended  bool          // this node, by job control
	held       bool          // this node's ranks, for other nodes' suspension
	acked      map[int]int64 // other nodes' suspensions acknowledged
	lostNodes  map[int]bool
	publishDue time.Time

	// An elastic job's world re-forms after a lost node (not final) and
	// grows for a node that asks to join while growable.
	elastic  bool
	etcd     bool         // the agents meet in etcd: a lost node's lease lapsed
	members  map[int]bool // the nodes of this world; nil: 0..nnodes-1
	growable bool         // room under MAX and a restart left (growNow)
	draining bool         // the ranks were asked to stop at a step boundary (SIGUSR1)
}

func newSupervisor(c Config, host string, w World, start time.Time) *supervisor {
	s := &supervisor{node: c.NodeRank, firstRank: w.FirstRank, nproc: c.NProc, host: host, start: start,
		multi: c.NNodes > 1, grace: c.GracePeriod, remoteWait: remoteWait,
		live: map[int]bool{}, cands: map[int]*candidate{}, reports: map[int]report{}, snaps: map[int]snapshot{},
		lostNodes: map[int]bool{}, acked: map[int]int64{}, etcd: c.Etcd != nil}
	for i := range c.NProc {
		s.live[w.FirstRank+i] = true
	}
	if s.elastic = c.Elastic(); s.elastic && w.Members != nil {
		s.members = map[int]bool{}
		for _, n := range w.Members {
			s.members[n] = true
		}
	}
	return s
}

// local reports whether global rank r runs on this node.
func (s *supervisor) local(r int) bool { return r >= s.firstRank && r < s.firstRank+s.nproc }

// on takes one event and returns what to do, in order.
func (s *supervisor) on(e event) []action {
	switch e.kind {
	case evReport:
		// A report counts whenever it came: a rank that failed on its own may
		// write it after the group began to stop (it closed its links, its
		// peers failed, the agent stopped it meanwhile); the rank itself says
		// whether the stop caused it (repStopped), and best's window orders it.
		s.reports[e.rank] = e.rep
		if e.rep.Class != repStopped {
			s.cands[e.rank] = s.fromReport(e, e.rep)
			return s.failed(e.at)
		}
	case evSnapshot:
		s.snaps[e.rank] = e.snap
	case evExit:
		delete(s.live, e.rank)
		failed := e.code != 0 || e.sig != 0
		if c := s.cands[e.rank]; c != nil {
			if failed && !e.stopped { // its own exit code, not the stop's
				c.f.Code = s.rankFailure(e, "").Code
			}
			break
		}
		if !failed || e.stopped {
			break
		}
		s.cands[e.rank] = &candidate{f: s.rankFailure(e, exitHow(e.code, e.sig, false)), class: firstHand, at: e.at, peer: -1}
		return s.failed(e.at)
	case evNodeLost:
		if s.lostNodes[e.node] {
			break
		}
		s.lostNodes[e.node] = true // the next round leaves it out, whatever the record says
		if s.members != nil && !s.members[e.node] {
			break // not of this world: a node waiting to join (etcd's leases show those), refused from now on
		}
		if s.winner != nil {
			if s.draining {
				return s.stop(e.at, syscall.SIGTERM) // no step boundary will come now
			}
			break
		}
		c := &candidate{f: failure{Node: e.node, Rank: -1, Code: 1, How: lostHow(e.node, s.etcd), After: s.after(e.at), Final: !s.elastic, Lost: true}, at: e.at, peer: -1}
		s.agentFail = c
		acts := s.stop(e.at, syscall.SIGTERM)
		return append(acts, s.publish(&c.f)...)
	case evJoin:
		return s.join(e)
	case evRemote, evAgreed:
		if s.winner != nil {
			break
		}
		s.winner = s.adopt(e.f)
		if s.failedAt.IsZero() {
			s.failedAt = e.at
		}
		var acts []action
		switch {
		case e.kind == evRemote && e.f.Node < 0:
			acts = append(acts, action{kind: actLog, text: e.f.How + ": stopping this node's ranks"})
		case e.f.Join:
			acts = append(acts, action{kind: actLog, text: e.f.How + ": stopping this node's ranks at a step boundary to re-form the world"})
			return append(acts, s.drain()...)
		case e.kind == evRemote && e.f.Node != s.node:
			acts = append(acts, action{kind: actLog, text: fmt.Sprintf("node %d failed (%s): stopping this node's ranks", e.f.Node, e.f.How)})
		}
		return append(acts, s.stop(e.at, syscall.SIGTERM)...)
	case evSignal:
		return s.signal(e)
	case evSuspensions:
		return s.othersSuspended(e.susp)
	case evCancel:
		return s.agentStop(e.at, 128+int(syscall.SIGTERM), "pplaunch was cancelled", syscall.SIGTERM)
	case evTick:
		var acts []action
		if s.stopping && !s.killed && !e.at.Before(s.stopAt.Add(s.grace)) {
			s.killed = true
			acts = append(acts, action{kind: actKill})
		}
		if s.multi && !s.published && s.winner == nil && !s.publishDue.IsZero() && !e.at.Before(s.publishDue) {
			if f := s.rootCause(); f != nil {
				acts = append(acts, s.publish(f)...)
			}
		}
		return acts
	}
	return nil
}

// failed is a rank failure seen at t: stop the group (first), then tell the
// other nodes once the root cause is clear enough.
func (s *supervisor) failed(t time.Time) []action {
	if s.failedAt.IsZero() {
		s.failedAt = t
	}
	acts := s.stop(t, syscall.SIGTERM)
	if !s.multi || s.published || s.winner != nil {
		return acts
	}
	best := s.best()
	switch {
	case best != nil && best.class == firstHand:
		if f := s.rootCause(); f != nil {
			acts = append(acts, s.publish(f)...)
		}
	default:
		// Only consequences so far. Their cause may still show: a local
		// rank's report (soon), or, when they blame a rank of another node,
		// that node's failure record or its lost heartbeat (within the
		// heartbeat deadline). Publishing now would make this node's rank the
		// root cause on every node.
		wait := settleWindow
		if best != nil && (best.peer < 0 || !s.local(best.peer)) {
			wait = s.remoteWait // the cause may be on another node
		}
		if due := s.failedAt.Add(wait); s.publishDue.IsZero() || due.After(s.publishDue) {
			s.publishDue = due
			acts = append(acts, action{kind: actWake, at: due})
		}
	}
	return acts
}

// stop begins stopping the group with sig, once (a drain in progress
// becomes a stop: the step boundary it waits for may never come).
func (s *supervisor) stop(t time.Time, sig syscall.Signal) []action {
	if s.stopping && !s.draining {
		return nil
	}
	s.stopping, s.draining, s.stopAt = true, false, t
	return []action{{kind: actStop, sig: sig}, {kind: actWake, at: t.Add(s.grace)}}
}

// drain asks the ranks to stop at the next step boundary with a checkpoint
// (the preemption signal), once. No kill follows: the step in flight and the
// checkpoint take what they take, and a failure meanwhile stops the group.
func (s *supervisor) drain() []action {
	if s.stopping {
		return nil
	}
	s.stopping, s.draining = true, true
	return []action{{kind: actStop, sig: syscall.SIGUSR1}}
}

// join is a node asking to join an elastic job (seen by node 0, which
// hosts the store): with room and a restart left, every node drains its
// ranks at a step boundary and the world re-forms with it; else it waits
// for the next re-layout.
func (s *supervisor) join(e event) []action {
	if s.stopping || s.published || s.winner != nil {
		return nil // a re-layout is coming: the next round admits it
	}
	if !s.growable {
		return []action{{kind: actLog, text: fmt.Sprintf("node %d asks to join: no room or no restart left; it waits for the next re-layout", e.node)}}
	}
	f := &failure{Node: e.node, Host: s.host, Rank: -1, How: fmt.Sprintf("node %d asks to join", e.node), After: s.after(e.at), Join: true}
	if s.failedAt.IsZero() {
		s.failedAt = e.at
	}
	return s.publish(f)
}

func (s *supervisor) publish(f *failure) []action {
	if !s.multi {
		return nil
	}
	if s.published || s.winner != nil {
		return nil
	}
	s.published = true
	return []action{{kind: actPublish, f: f}}
}

// signal handles a signal to the agent.
func (s *supervisor) signal(e event) []action {
	switch e.sig {
	case syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP:
		if s.stopping {
			s.killed = true
			return []action{{kind: actKill}}
		}
		return s.agentStop(e.at, 128+int(e.sig), "pplaunch received "+contract.SignalName(e.sig), e.sig)
	case syscall.SIGTSTP:
		s.suspended = true
		return []action{{kind: actSuspend}}
	case syscall.SIGCONT:
		if !s.suspended {
			return []action{{kind: actForward, sig: e.sig}}
		}
		s.suspended = false
		return []action{{kind: actResume}}
	default:
		return []action{{kind: actForward, sig: e.sig}, {kind: actLog, text: fmt.Sprintf("forwarded %s to the ranks", contract.SignalName(e.sig))}}
	}
}

// othersSuspended follows the other nodes suspended by job control (nodes:
// node → episode): the job cannot step while one is, so this node's ranks are
// held (stopped) until none is, and each suspension is acknowledged once they
// are. A group that is stopping is left to stop.
func (s *supervisor) othersSuspended(nodes map[int]int64) []action {
	if s.stopping {
		return nil
	}
	var acts []action
	ids := slices.Sorted(maps.Keys(nodes))
	if len(ids) > 0 && !s.held {
		s.held = true
		acts = append(acts, action{kind: actLog, text: fmt.Sprintf("node %s suspended (job control): suspending this node's ranks until it resumes", strings.Trim(fmt.Sprint(ids), "[]"))},
			action{kind: actHold})
	}
	for _, n := range ids {
		if s.acked[n] < nodes[n] {
			s.acked[n] = nodes[n]
			acts = append(acts, action{kind: actAck, node: n, episode: nodes[n]})
		}
	}
	if len(ids) == 0 && s.held {
		s.held = false
		acts = append(acts, action{kind: actLog, text: "the suspended nodes resumed: resuming this node's ranks"}, action{kind: actRelease})
	}
	return acts
}

// agentStop is the job told to stop (a signal, a cancelled context): stop
// the ranks with sig, then record it as the failure, final (no restart).
func (s *supervisor) agentStop(t time.Time, code int, how string, sig syscall.Signal) []action {
	var acts []action
	if !s.stopping {
		if sig != syscall.SIGTERM || how != "pplaunch was cancelled" {
			acts = append(acts, action{kind: actLog, text: fmt.Sprintf("received %s: forwarding it to the ranks and stopping", contract.SignalName(sig))})
		}
		acts = append(acts, s.stop(t, sig)...)
	}
	if s.agentFail == nil && len(s.cands) == 0 && s.winner == nil {
		s.agentFail = &candidate{f: failure{Node: s.node, Host: s.host, Rank: -1, Code: code, How: how, Pid: s.pid, After: s.after(t), Final: true}, at: t, peer: -1}
		if s.failedAt.IsZero() {
			s.failedAt = t
		}
		acts = append(acts, s.publish(&s.agentFail.f)...)
	}
	return acts
}

// done reports whether the attempt is over: every local rank ended, and the
// root cause is settled (on several nodes: agreed through the store).
func (s *supervisor) done() bool {
	if len(s.live) > 0 {
		return false
	}
	if !s.multi || s.failedAt.IsZero() {
		return true
	}
	return s.winner != nil
}

// outcome is the attempt's failure, or nil when every local rank succeeded
// (on several nodes the other nodes' outcome comes after: awaitNodes).
func (s *supervisor) outcome() *failure {
	if s.winner != nil {
		return s.winner
	}
	return s.rootCause()
}

// exitHow says how a rank ended, for the summary.
func exitHow(code int, sig syscall.Signal, stopped bool) string {
	switch {
	case sig != 0:
		s := fmt.Sprintf("killed by %s", contract.SignalName(sig))
		if stopped {
			s += " (stopped by pplaunch)"
		}
		return s
	case stopped:
		return fmt.Sprintf("exited with code %d after pplaunch stopped it", code)
	default:
		return fmt.Sprintf("exited with code %d", code)
	}
}

// signalSet is a set of signals (bit N: signal N).
type signalSet uint64

func (s signalSet) with(sig syscall.Signal) signalSet { return s | 1<<uint(sig) }
func (s signalSet) has(sig syscall.Signal) bool       { return s&(1<<uint(sig)) != 0 }

// endedByStop reports whether a rank's end was the agent's stop: the agent
// had sent it a signal to stop it (sent), and no signal other than one of
// those ended it. A rank that died of a signal the agent did not send (a
// SIGKILL from outside, a crash) had ended on its own before the stop reached
// it: its keeper had not yet reaped it when another rank's failure (a peer
// that saw its links close) made the agent stop the group. Such a rank is a
// failure, and the root cause before the peers that saw it go.
func endedByStop(sent signalSet, sig syscall.Signal) bool {
	return sent != 0 && (sig == 0 || sent.has(sig))
}

// nextAttempt decides after an attempt: restart the group, or end with code.
func nextAttempt(f *failure, restart, maxRestarts int) (again bool, code int) {
	switch {
	case f == nil:
		return false, 0
	case f.Final || restart >= maxRestarts:
		return false, f.Code
	default:
		return true, 0
	}
}
