package ranks

import (
	"cmp"
	"slices"

	"github.com/pplaunch/pplaunch/schedules"
)

// Transfer is what one rank exchanged with one peer in a step: the bytes of
// the activations and gradients it sent and received (float32 [B, Seq,
// Width] each), and the seconds its transfer actions with that peer took
// (posting a send or receive, and waiting where the action waits; the
// data-parallel all-reduce is not counted).
type Transfer struct {
	Rank      int     `json:"rank"`
	Peer      int     `json:"peer"`
	SentBytes int64   `json:"sent_bytes"`
	RecvBytes int64   `json:"recv_bytes"`
	Seconds   float64 `json:"seconds"`
}

// transfers counts, from every rank's measured step (world ranks, replica
// d's pipeline rank p at d·pp + p), the transfers between each pair of
// ranks, sorted by rank and peer. msgBytes is the size of one message.
func transfers(sched *schedules.Schedule, pp int, tl *schedules.Timeline, msgBytes int64) []Transfer {
	type pair struct{ rank, peer int }
	sums := map[pair]*Transfer{}
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
				tr = &Transfer{Rank: r, Peer: peer}
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
	out := make([]Transfer, 0, len(sums))
	for _, tr := range sums {
		out = append(out, *tr)
	}
	slices.SortFunc(out, func(a, b Transfer) int { return cmp.Or(cmp.Compare(a.Rank, b.Rank), cmp.Compare(a.Peer, b.Peer)) })
	return out
}
