package schedules

import (
	"fmt"
)

// Backends that pair point-to-point transfers by order (NCCL) add two rules
// to the rendezvous of Validate's dry run:
//
//  1. Pairing by order: the k-th send from rank r to rank q is matched with
//     the k-th receive on q from r, whatever their tags. Each pair's sends on
//     one side must therefore be the matching receives on the other, in the
//     same order; otherwise a receive gets another message (of another size:
//     an error; of the same size: silently wrong data).
//  2. Stream order: each rank's transfers run one group after another on its
//     communication stream, and a transfer finishes only when its partner is
//     in the partner rank's running group. The host issues the transfers in
//     list order and blocks at a compute until the receive it needs is done.
//     A send and a receive with the same peer that must progress together
//     (the 1F1B steady state) have to be in one group.
//
// CheckPairing runs a schedule through both, grouping its transfers by
// groups. PairingError and DeadlockError say what breaks.

// Grouping splits one rank's list into the transfer groups it issues.
type Grouping func(list []Action) [][]int

// Singly issues every transfer on its own (Isend/Irecv, one group each).
func Singly(list []Action) [][]int {
	var g [][]int
	for i, a := range list {
		if a.Kind.IsTransfer() {
			g = append(g, []int{i})
		}
	}
	return g
}

// TransferRuns issues each maximal run of consecutive transfers as one group
// (one Batch): the rule for an executor on an order-pairing backend, since it
// puts every send and receive that the list places side by side together.
func TransferRuns(list []Action) [][]int {
	var g [][]int
	var run []int
	for i, a := range list {
		if a.Kind.IsTransfer() {
			run = append(run, i)
			continue
		}
		if run != nil {
			g, run = append(g, run), nil
		}
	}
	if run != nil {
		g = append(g, run)
	}
	return g
}

// PairingError is a send and a receive that order-pairing would match
// although they are not each other's partners.
type PairingError struct {
	From, To int    // sending and receiving rank
	N        int    // 0-based index of the transfer in the pair's order
	Send     Action // the sender's N-th send to To (zero Kind and Step -1: none)
	Recv     Action // the receiver's N-th receive from From
	SendStep int    // index of Send in From's list, -1 if there is none
	RecvStep int    // index of Recv in To's list, -1 if there is none
}

func (e *PairingError) Error() string {
	send, recv := "no send", "no receive"
	if e.SendStep >= 0 {
		send = fmt.Sprintf("%v (step %d)", e.Send, e.SendStep)
	}
	if e.RecvStep >= 0 {
		recv = fmt.Sprintf("%v (step %d)", e.Recv, e.RecvStep)
	}
	return fmt.Sprintf("transfers pair wrongly by order: rank %d's send #%d to rank %d is %s, but rank %d's receive #%d from rank %d is %s; "+
		"a backend that pairs by order (NCCL) would match them: list the transfers between two ranks in the same order on both",
		e.From, e.N+1, e.To, send, e.To, e.N+1, e.From, recv)
}

// CheckPairing checks s against order-pairing and stream order with the
// transfers grouped by g (Singly or TransferRuns). Transfers between stages
// on the same rank are local and skipped.
func CheckPairing(s *Schedule, g Grouping) error {
	partner, err := orderPairs(s)
	if err != nil {
		return err
	}
	return streamRun(s, g, partner)
}

// orderPairs checks rule 1 for every ordered pair of ranks and returns each
// transfer's partner.
func orderPairs(s *Schedule) (map[loc]loc, error) {
	type pair struct{ from, to int }
	sends, recvs := map[pair][]int{}, map[pair][]int{}
	for r, list := range s.Ranks {
		for i, a := range list {
			q := s.Peer(a)
			if q < 0 || q == r {
				continue
			}
			switch a.Kind {
			case SendF, SendB:
				sends[pair{r, q}] = append(sends[pair{r, q}], i)
			case RecvF, RecvB:
				recvs[pair{q, r}] = append(recvs[pair{q, r}], i)
			}
		}
	}
	partner := map[loc]loc{}
	for from := range s.P {
		for to := range s.P {
			p := pair{from, to}
			ss, rs := sends[p], recvs[p]
			for n := range max(len(ss), len(rs)) {
				e := &PairingError{From: from, To: to, N: n, SendStep: -1, RecvStep: -1}
				if n < len(ss) {
					e.SendStep, e.Send = ss[n], s.Ranks[from][ss[n]]
				}
				if n < len(rs) {
					e.RecvStep, e.Recv = rs[n], s.Ranks[to][rs[n]]
				}
				if e.SendStep < 0 || e.RecvStep < 0 {
					return nil, e
				}
				if m, _ := e.Send.Matching(); m != e.Recv {
					return nil, e
				}
				partner[loc{from, e.SendStep}] = loc{to, e.RecvStep}
				partner[loc{to, e.RecvStep}] = loc{from, e.SendStep}
			}
		}
	}
	return partner, nil
}
