package launch

import (
	"fmt"
	"sort"
	"strings"
	"time"
)

// The root cause among an attempt's failures (part of the supervisor's pure
// decisions, decide.go).
//
// Ordering: every failure seen is a candidate, stamped when it happened (a
// rank's report: when the rank wrote it; an exit: when its keeper reaped
// it). Candidates stamped within settleWindow of the earliest one are
// ordered by kind first: a first-hand failure (a rank's own error or crash,
// a rank that timed out waiting, a lost node, a signal to the agent) before a
// consequence (a rank that saw its peer close or abort the link, relayed
// another rank's reported failure, or was stopped by pplaunch), because a
// consequence can be stamped before its cause (see settleWindow); then by
// time; then by rank. Later candidates are independent failures and never
// the root cause. From the chosen one, blame is followed: a rank that timed
// out waiting for peer P, or saw P vanish, hands the blame to P's own
// failure; a P with none that left a rank waiting is the silent rank (hung,
// or stopped by a signal), named with what it was last doing.

// class orders candidates for the root cause.
type class int

const (
	firstHand   class = iota // a rank's own error or crash, a silent rank, a lost node, a signal to the agent
	consequence              // a rank that saw a peer vanish, relayed a failure, or was stopped
)

// candidate is one failure that could be the root cause.
type candidate struct {
	f       failure
	class   class
	at      time.Time
	peer    int  // the rank it blames (timeout, peer gone), -1 for none
	timeout bool // it timed out waiting for peer
	why     string
}

// best is the highest-ranked candidate before blame is followed: within
// settleWindow of the earliest failure, first-hand before consequence, then
// the earlier, then the lower rank (the agent's own failures first).
func (s *supervisor) best() *candidate {
	all := make([]*candidate, 0, len(s.cands)+1)
	if s.agentFail != nil {
		all = append(all, s.agentFail)
	}
	ranks := make([]int, 0, len(s.cands))
	for r := range s.cands {
		ranks = append(ranks, r)
	}
	sort.Ints(ranks)
	for _, r := range ranks {
		all = append(all, s.cands[r])
	}
	if len(all) == 0 {
		return nil
	}
	t0 := all[0].at
	for _, c := range all {
		if c.at.Before(t0) {
			t0 = c.at
		}
	}
	var best *candidate
	for _, c := range all {
		if c.at.After(t0.Add(settleWindow)) {
			continue
		}
		if best == nil || c.class < best.class || (c.class == best.class && c.at.Before(best.at)) {
			best = c
		}
	}
	return best
}

// rootCause is the failure the summary names: the best candidate, then, while
// it blames a peer (it timed out waiting for it, or saw it vanish), the
// peer's own failure; a peer with none that left a rank waiting is named as
// the silent rank, with what it was last doing.
func (s *supervisor) rootCause() *failure {
	c := s.best()
	if c == nil {
		return nil
	}
	seen := map[int]bool{} // by rank: blame can run in a circle (0 waited on 1, 1 then saw 0 go)
	for c.peer >= 0 && !seen[c.f.Rank] {
		seen[c.f.Rank] = true
		next := s.cands[c.peer]
		// A peer whose only failure is a consequence that came after the
		// wait for it ran out (it saw the waiting rank go, or was stopped)
		// did not answer before then: it is the silent rank.
		if next == nil || (c.timeout && next.class == consequence && !next.at.Before(c.at)) {
			if c.timeout {
				f := s.silent(c)
				return &f
			}
			break
		}
		next = s.withWhy(next, c)
		c = next
	}
	f := c.f
	return &f
}

// withWhy notes on the blamed candidate who it held up.
func (s *supervisor) withWhy(next, by *candidate) *candidate {
	cp := *next
	if by.timeout && cp.f.Rank >= 0 {
		cp.f.How += fmt.Sprintf("; rank %d timed out waiting for it", by.f.Rank)
	}
	return &cp
}

// silent is the failure of a peer that left c's rank waiting until its
// deadline without failing itself: a hung or stopped rank.
func (s *supervisor) silent(c *candidate) failure {
	p := c.peer
	f := failure{Node: -1, Rank: p, Local: -1, Code: c.f.Code, After: c.f.After, Final: c.f.Final}
	what := silentElsewhere
	if s.local(p) {
		f, what = s.localSilent(f)
	}
	f.How = fmt.Sprintf("%s; rank %d timed out waiting for it: %s", what, c.f.Rank, c.why)
	return f
}

// silentElsewhere begins the account of a silent rank on another node; that
// node's agent replaces it with what it knows (localSilent).
const silentElsewhere = "was silent (on another node)"

// localSilent fills in f, the failure of silent local rank f.Rank, from its
// snapshot, and says what it was doing.
func (s *supervisor) localSilent(f failure) (failure, string) {
	snap := s.snaps[f.Rank]
	f.Node, f.Host, f.Local, f.Pid = s.node, s.host, f.Rank-s.firstRank, snap.Pid
	what := "was silent: running, but it did not answer"
	if snap.State == "stopped" {
		what = "was silent: its process was stopped (SIGSTOP or SIGTSTP)"
	}
	if snap.Action != "" {
		what += fmt.Sprintf("; its last action: %s, begun %s after start", snap.Action, snap.Since.Sub(s.start).Round(time.Millisecond))
	} else {
		what += "; it published no action"
	}
	return f, what
}

// adopt is the job's failure record as this node tells it: a record that
// names one of this node's ranks as silent gets what this node knows of it.
func (s *supervisor) adopt(f *failure) *failure {
	rest, ok := strings.CutPrefix(f.How, silentElsewhere)
	if !ok || f.Rank < 0 || !s.local(f.Rank) {
		return f
	}
	if _, seen := s.snaps[f.Rank]; !seen {
		return f
	}
	mine, what := s.localSilent(*f)
	mine.How = what + rest
	return &mine
}

// fromReport makes the candidate of a rank's report.
func (s *supervisor) fromReport(e event, r report) *candidate {
	code := 1 // a rank's failure, until its exit says more
	if old := s.cands[e.rank]; old != nil {
		code = old.f.Code
	}
	if e.code > 0 { // the report of a rank that has ended (exitEvents)
		code = e.code
	}
	c := &candidate{at: r.At, peer: -1, why: r.Text}
	switch r.Class {
	case repTimeout:
		c.class, c.peer, c.timeout = firstHand, r.Peer, true
	case repPeerGone:
		c.class, c.peer = consequence, r.Peer
	case repRelayed:
		c.class, c.peer = consequence, r.Peer
	default:
		c.class = firstHand
	}
	f := s.rankFailure(event{rank: e.rank, local: e.local, pid: e.pid, at: r.At, code: code}, "failed: "+r.Text)
	f.Code = code
	c.f = f
	return c
}

func (s *supervisor) rankFailure(e event, how string) failure {
	code := e.code
	if e.sig != 0 {
		code = 128 + int(e.sig)
	}
	return failure{Node: s.node, Host: s.host, Rank: e.rank, Local: e.local, Code: code, How: how, Pid: e.pid, After: s.after(e.at)}
}

func (s *supervisor) after(t time.Time) string {
	return t.Sub(s.start).Round(time.Millisecond).String()
}
