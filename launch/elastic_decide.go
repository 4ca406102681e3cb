package launch

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// An elastic job (--nnodes MIN:MAX) re-forms its world between attempts:
// node 0, which hosts the store, decides who takes part in each round, from
// the nodes of the last round that are not lost and the nodes that asked to
// join, in the order they asked. These are its decisions, without effects
// (elastic.go carries them out; elastic_decide_test.go tests them).

// lastCall is how long the first round waits, once MIN nodes have asked to
// join, for more before it forms with fewer than MAX (torchrun's
// last_call_timeout, shorter: a node that starts later still joins, through
// a re-layout).
const lastCall = 10 * time.Second

// joinRequest is an agent asking node 0 for a place in the job.
type joinRequest struct {
	Node  int `json:"node"`
	NProc int `json:"nproc"`
}

// admission is node 0's answer to a join request: the round the node takes
// part from, or why it was refused.
type admission struct {
	Round   int    `json:"round"`
	Refused string `json:"refused,omitempty"`
}

// roundPlan is who takes part in one round.
type roundPlan struct {
	Members  []int         // node names, increasing (node 0 first: it holds rank 0)
	Admitted []joinRequest // new in this round
	Pending  []joinRequest // asked, but the world is full (MAX): they wait for a place
	Refused  map[int]string
}

// planRound is the world of the next round: the last round's members that
// are not gone, then the join requests in the order they came while there is
// room under max. A request from a node already in the job is refused (two
// agents were given the same --node-rank). Fewer than min members is an
// error that says why.
func planRound(prev []int, gone map[int]bool, pending []joinRequest, min, max int) (roundPlan, error) {
	var p roundPlan
	in := map[int]bool{}
	for _, n := range prev {
		if !gone[n] {
			p.Members = append(p.Members, n)
			in[n] = true
		}
	}
	for _, j := range pending {
		switch {
		case in[j.Node] || gone[j.Node]:
			if p.Refused == nil {
				p.Refused = map[int]string{}
			}
			p.Refused[j.Node] = fmt.Sprintf("node %d is already part of the job (or was lost from it): give each agent its own --node-rank", j.Node)
		case len(p.Members) < max:
			p.Members = append(p.Members, j.Node)
			p.Admitted = append(p.Admitted, j)
			in[j.Node] = true
		default:
			p.Pending = append(p.Pending, j)
		}
	}
	slices.Sort(p.Members)
	if len(p.Members) < min {
		why := relayoutReason(prev, p.Members)
		if why != "" {
			why = " (" + why + ")"
		}
		return p, fmt.Errorf("%s left (%s)%s, fewer than --nnodes %d:%d allows: stopping", count(len(p.Members), "node"), nodeList(p.Members), why, min, max)
	}
	return p, nil
}

// firstRoundForms says whether the first round forms now: with max nodes
// asking, at once; with min, once lastCall has passed since the last asked.
func firstRoundForms(asked, min, max int, lastAsked, now time.Time) bool {
	return asked >= max || (asked >= min && !now.Before(lastAsked.Add(lastCall)))
}

// growNow says whether a node asking to join makes the running world stop
// and re-form: only with room under max and a restart left to spend on it
// (a re-layout counts against --max-restarts). Otherwise it waits for the
// next re-layout.
func growNow(members, max, restart, maxRestarts int) bool {
	return members < max && restart < maxRestarts
}

// relayoutReason says why round's world differs from the last one's, in the
// log's words ("" when it has the same nodes).
func relayoutReason(prev, now []int) string {
	var lost, joined []int
	for _, n := range prev {
		if !slices.Contains(now, n) {
			lost = append(lost, n)
		}
	}
	for _, n := range now {
		if !slices.Contains(prev, n) {
			joined = append(joined, n)
		}
	}
	var parts []string
	if len(lost) > 0 {
		parts = append(parts, plural(lost)+" lost")
	}
	if len(joined) > 0 {
		parts = append(parts, nodesNoun(joined)+" joined")
	}
	return strings.Join(parts, ", ")
}

// plural is "node 2 was" or "nodes 2, 3 were".
func plural(nodes []int) string {
	if len(nodes) == 1 {
		return nodesNoun(nodes) + " was"
	}
	return nodesNoun(nodes) + " were"
}

// nodesNoun is "node 2" or "nodes 2, 3".
func nodesNoun(nodes []int) string {
	if len(nodes) == 1 {
		return fmt.Sprintf("node %d", nodes[0])
	}
	return "nodes " + nodeList(nodes)
}

// count is "1 node" or "2 nodes".
func count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

func nodeList(nodes []int) string {
	s := make([]string, len(nodes))
	for i, n := range nodes {
		s[i] = fmt.Sprint(n)
	}
	return strings.Join(s, ", ")
}
