package schedules

import (
	"fmt"
)

// Lower inserts the transfers into a compute-only schedule and validates the
// result.
//
// It runs the compute lists against each other with nominal costs (F=1, B=2,
// I=W=1, free transfers). When an action finishes and its output is needed on
// another rank, a SEND is appended to the producer's list and the matching
// RECV to the consumer's list at the same moment. Every SEND/RECV pair is
// thus adjacent in one global order of all ranks' actions, so executing each
// rank's list in order with blocking rendezvous transfers (a SEND returns when
// the peer has posted the RECV, as with NCCL) never deadlocks, whatever the
// real costs are; no send and receive need to be grouped. Sends come right
// after the compute that produces them; receives come where the data is
// expected to be ready, before the compute that needs it.
//
// A compute order that cannot finish (a rank waits for data that its peer
// only produces after data from the first rank) is a *DeadlockError naming
// every blocked rank; other problems are an *Error.
func Lower(s *Schedule) (*Schedule, error) {
	c, err := checkStatic(s, true)
	if err != nil {
		return nil, err
	}
	out := &Schedule{P: s.P, V: s.V, M: s.M, Placement: append([]int(nil), s.Placement...), Ranks: make([][]Action, s.P)}
	last := len(s.Placement) - 1
	done := make([]bool, len(c.dense)) // dense: complete() passed
	emitTransfer := func(r int, a Action) {
		var send Action
		switch {
		case a.Kind == F && a.Stage < last && s.Placement[a.Stage+1] != r:
			send = Action{SendF, a.Stage, a.Micro}
		case (a.Kind == B || a.Kind == I) && a.Stage > 0 && s.Placement[a.Stage-1] != r:
			send = Action{SendB, a.Stage, a.Micro}
		default:
			return
		}
		recv, _ := send.Matching()
		q := out.Peer(send)
		out.Ranks[r] = append(out.Ranks[r], send)
		out.Ranks[q] = append(out.Ranks[q], recv)
	}
	next := make([]int, s.P)
	end := make([]int, s.P)
	running := make([]bool, s.P)
	for t := 0; ; {
		for r := range s.P {
			if running[r] && end[r] == t {
				a := s.Ranks[r][next[r]-1]
				done[c.id(a)] = true
				running[r] = false
				emitTransfer(r, a)
			}
		}
		finished, started := true, false
		for r := range s.P {
			if running[r] {
				finished, started = false, true
				continue
			}
			if next[r] == len(s.Ranks[r]) {
				continue
			}
			finished = false
			a := s.Ranks[r][next[r]]
			if _, ok := c.missing(a, done); ok {
				continue
			}
			out.Ranks[r] = append(out.Ranks[r], a)
			next[r]++
			running[r], end[r], started = true, t+nominal(a.Kind), true
		}
		if finished {
			break
		}
		if !started {
			return nil, c.computeDeadlock(next, done)
		}
		t = -1
		for r := range s.P {
			if running[r] && (t < 0 || end[r] < t) {
				t = end[r]
			}
		}
	}
	if err := Validate(out); err != nil {
		return nil, fmt.Errorf("lowering produced an invalid schedule (a bug in Lower): %w", err)
	}
	return out, nil
}

// nominal is the cost Lower uses to decide where receives go.
func nominal(k Kind) int {
	if k == B {
		return 2
	}
	return 1
}

// missing returns the first input of compute action a that is not done yet.
func (c *checker) missing(a Action, done []bool) (Action, bool) {
	last := len(c.s.Placement) - 1
	switch a.Kind {
	case F:
		if a.Stage > 0 && !done[c.id(Action{F, a.Stage - 1, a.Micro})] {
			return Action{F, a.Stage - 1, a.Micro}, true
		}
	case B, I:
		if !done[c.id(Action{F, a.Stage, a.Micro})] {
			return Action{F, a.Stage, a.Micro}, true
		}
		if a.Stage < last {
			b, i := Action{B, a.Stage + 1, a.Micro}, Action{I, a.Stage + 1, a.Micro}
			if !done[c.id(b)] && !done[c.id(i)] {
				if c.has(i) {
					return i, true
				}
				return b, true
			}
		}
	case W:
		if !done[c.id(Action{I, a.Stage, a.Micro})] {
			return Action{I, a.Stage, a.Micro}, true
		}
	}
	return Action{}, false
}

// computeDeadlock describes a compute order in which no rank can start its
// next action.
func (c *checker) computeDeadlock(next []int, done []bool) error {
	s := c.s
	var waits []Wait
	var marks []loc
	for r := range s.P {
		if next[r] == len(s.Ranks[r]) {
			continue
		}
		a := s.Ranks[r][next[r]]
		need, _ := c.missing(a, done)
		q := s.Placement[need.Stage]
		w := Wait{Rank: r, Step: next[r], Action: a, Peer: q, Needs: need, PeerStep: -1}
		if next[q] < len(s.Ranks[q]) {
			w.PeerStep, w.PeerAt = next[q], s.Ranks[q][next[q]]
		}
		waits = append(waits, w)
		marks = append(marks, loc{r, next[r]})
	}
	return &DeadlockError{Waits: waits, Grid: grid(s, marks)}
}
