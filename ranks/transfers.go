package ranks

import (
	"cmp"
	"slices"

	"github.com/pplaunch/pplaunch/schedules"
)

// PeerTraffic is what one rank exchanged with one peer in a step: the bytes of
// the activations and gradients it sent and received ([B, Seq, Width] each,
// 4 bytes an element, 2 in bf16), and the seconds its transfer actions with that peer took
// (posting a send or receive, and waiting where the action waits; the
// data-parallel all-reduce is not counted).
type PeerTraffic struct {
	Rank      int     `json:"rank"`
	Peer      int     `json:"peer"`
	SentBytes int64   `json:"sent_bytes"`
	RecvBytes int64   `json:"recv_bytes"`
	Seconds   float64 `json:"seconds"`
}

// transfers counts, from every rank's measured step (world ranks, replica
// d's pipeline rank p at d·pp + p), the transfers between each pair of
// ranks, sorted by rank and peer. msgBytes is the size of one message.
func transfers(sched *schedules.Schedule, pp int, tl *schedules.Timeline, msgBytes int64) []PeerTraffic {
	type pair struct{ rank, peer int }
	sums := map[pair]*PeerTraffic{}
	for r, spans := range tl.Ranks {
		for _, sp := range spans {
			a := sp.Action
			if !a.Kind.IsTransfer() {
				continue
			}
			m, ok := a.Matching()
			if !ok || m.Stage < 0 || m.Stage >= len(sched.Placement) {
				continue
			}
			peer := r/pp*pp + sched.Placement[m.Stage]
			if peer == r {
				continue
			}
			k := pair{r, peer}
			tr := sums[k]
			if tr == nil {
				tr = &PeerTraffic{Rank: r, Peer: peer}
				sums[k] = tr
			}
			if a.Kind == schedules.SendF || a.Kind == schedules.SendB {
				tr.SentBytes += msgBytes
			} else {
				tr.RecvBytes += msgBytes
			}
			tr.Seconds += sp.End - sp.Start
		}
	}
	out := make([]PeerTraffic, 0, len(sums))
	for _, tr := range sums {
		out = append(out, *tr)
	}
	slices.SortFunc(out, func(a, b PeerTraffic) int { return cmp.Or(cmp.Compare(a.Rank, b.Rank), cmp.Compare(a.Peer, b.Peer)) })
	return out
}

// waitTimes splits the time each rank's computes waited for their
// inputs (world ranks, replica d's pipeline rank p at d·pp + p, on one
// clock). A compute that starts after a gap waited, from the end of the
// rank's previous compute, first for the peer to compute and send the
// input (the bubble) and then for the message to arrive (the transfer): the
// second part, from the peer's SEND to the end of the rank's RECV, is
// counted per rank in waits. latency is the median time from SEND to
// arrival over the messages a compute waited for (0 if none was waited
// for): what one transfer takes on this network, queueing included.
func waitTimes(sched *schedules.Schedule, pp int, tl *schedules.Timeline) (waits []float64, latency float64) {
	spans := make([]map[schedules.Action]schedules.Span, len(tl.Ranks))
	for r, list := range tl.Ranks {
		spans[r] = make(map[schedules.Action]schedules.Span, len(list))
		for _, sp := range list {
			spans[r][sp.Action] = sp
		}
	}
	waits = make([]float64, len(tl.Ranks))
	var lat []float64
	for r, list := range tl.Ranks {
		if len(list) == 0 {
			continue
		}
		prev := list[0].Start // the rank's step began with its first action
		for _, sp := range list {
			a := sp.Action
			if !a.Kind.IsCompute() {
				continue
			}
			idleFrom := prev
			prev = sp.End
			recv, ok := inputRecv(a)
			if !ok {
				continue
			}
			rs, ok := spans[r][recv]
			if !ok {
				continue // the input was on this rank
			}
			send, _ := recv.Matching()
			ss, ok := spans[r/pp*pp+sched.Placement[send.Stage]][send]
			if !ok {
				continue
			}
			arrived := min(rs.End, sp.Start)
			if w := arrived - max(idleFrom, ss.Start); w > 0 {
				waits[r] += w
			}
			if ss.Start >= idleFrom && arrived > ss.Start {
				// The rank was waiting when the message left: it saw it arrive.
				lat = append(lat, arrived-ss.Start)
			}
		}
	}
	return waits, median(lat)
}

// inputRecv is the receive that brings compute a's input from another
// stage: its activation for a forward, its output's gradient for a backward
// (none for a weight pass).
func inputRecv(a schedules.Action) (schedules.Action, bool) {
	switch a.Kind {
	case schedules.F:
		return schedules.Action{Kind: schedules.RecvF, Stage: a.Stage, Micro: a.Micro}, true
	case schedules.B, schedules.I:
		return schedules.Action{Kind: schedules.RecvB, Stage: a.Stage, Micro: a.Micro}, true
	}
	return schedules.Action{}, false
}
