package schedules

import (
	"fmt"
	"strconv"
)

// Kind is what an action does.
type Kind uint8

// The action kinds. The stage of a transfer is always the stage on the rank
// that performs it: SendF(s) sends stage s's output to stage s+1, RecvF(s)
// receives stage s's input from stage s-1, SendB(s) sends the gradient of
// stage s's input to stage s-1, RecvB(s) receives the gradient of stage s's
// output from stage s+1.
const (
	F     Kind = iota // forward
	B                 // full backward (input and weight gradients)
	I                 // backward, input gradient only
	W                 // backward, weight gradient only
	SendF             // send activation to the next stage
	RecvF             // receive activation from the previous stage
	SendB             // send input gradient to the previous stage
	RecvB             // receive output gradient from the next stage
	numKinds
)

var kindNames = [numKinds]string{"F", "B", "I", "W", "SEND_F", "RECV_F", "SEND_B", "RECV_B"}

// String returns the kind as written in the text form ("F", "SEND_B", ...).
func (k Kind) String() string {
	if k < numKinds {
		return kindNames[k]
	}
	return fmt.Sprintf("Kind(%d)", uint8(k))
}

// IsCompute reports whether k is F, B, I or W.
func (k Kind) IsCompute() bool { return k <= W }

// IsTransfer reports whether k is one of the four transfer kinds.
func (k Kind) IsTransfer() bool { return k >= SendF && k < numKinds }

// Action is one entry of a rank's list: a kind, a virtual stage index in
// [0, P·V) and a micro-batch index in [0, M).
type Action struct {
	Kind  Kind
	Stage int
	Micro int
}

// String returns the action in the text form, e.g. "0F3" or "2SEND_B1".
func (a Action) String() string {
	return string(a.appendText(nil))
}

func (a Action) appendText(b []byte) []byte {
	b = strconv.AppendInt(b, int64(a.Stage), 10)
	b = append(b, a.Kind.String()...)
	return strconv.AppendInt(b, int64(a.Micro), 10)
}

// Matching returns the transfer a peer performs to complete a: SendF(s,m)
// pairs with RecvF(s+1,m), SendB(s,m) with RecvB(s-1,m), and the other way
// round. ok is false for compute actions and for transfers that would leave
// the stage range at stage 0 (RecvF, SendB).
func (a Action) Matching() (m Action, ok bool) {
	switch a.Kind {
	case SendF:
		return Action{RecvF, a.Stage + 1, a.Micro}, true
	case RecvF:
		return Action{SendF, a.Stage - 1, a.Micro}, a.Stage > 0
	case SendB:
		return Action{RecvB, a.Stage - 1, a.Micro}, a.Stage > 0
	case RecvB:
		return Action{SendB, a.Stage + 1, a.Micro}, true
	}
	return Action{}, false
}

// peerStage is the stage on the other end of a transfer.
func (a Action) peerStage() int {
	switch a.Kind {
	case SendF, RecvB:
		return a.Stage + 1
	case RecvF, SendB:
		return a.Stage - 1
	}
	return -1
}

// Schedule is one training step of a pipeline: for every rank, the ordered
// list of actions it performs. Stage s runs on rank Placement[s]; there are
// P·V stages.
type Schedule struct {
	P         int        // ranks
	V         int        // virtual stages per rank
	M         int        // micro-batches per step
	Placement []int      // stage -> rank, len P·V
	Ranks     [][]Action // per rank, in execution order
}

// Stages returns the number of stages, P·V.
func (s *Schedule) Stages() int { return len(s.Placement) }

// Peer returns the rank on the other end of the transfer a, or -1 when a is a
// compute action or its peer stage does not exist.
func (s *Schedule) Peer(a Action) int {
	if !a.Kind.IsTransfer() {
		return -1
	}
	ps := a.peerStage()
	if ps < 0 || ps >= len(s.Placement) {
		return -1
	}
	return s.Placement[ps]
}

// StagesOf returns the stages placed on rank, in increasing order.
func (s *Schedule) StagesOf(rank int) []int {
	var out []int
	for st, r := range s.Placement {
		if r == rank {
			out = append(out, st)
		}
	}
	return out
}

// Clone returns a deep copy of s.
func (s *Schedule) Clone() *Schedule {
	c := &Schedule{P: s.P, V: s.V, M: s.M, Placement: append([]int(nil), s.Placement...)}
	c.Ranks = make([][]Action, len(s.Ranks))
	for r, l := range s.Ranks {
		c.Ranks[r] = append([]Action(nil), l...)
	}
	return c
}

// HasTransfers reports whether any rank's list holds a transfer action.
func (s *Schedule) HasTransfers() bool {
	for _, l := range s.Ranks {
		for _, a := range l {
			if a.Kind.IsTransfer() {
				return true
			}
		}
	}
	return false
}

// LoopedPlacement places stage s on rank s mod p, for p·v stages (GPipe,
// 1F1B, interleaved 1F1B).
func LoopedPlacement(p, v int) []int {
	pl := make([]int, p*v)
	for s := range pl {
		pl[s] = s % p
	}
	return pl
}

// VPlacement places 2p stages in a V: stages 0..p-1 on ranks 0..p-1, then
// stages p..2p-1 back on ranks p-1..0, so rank 0 holds the first and the last
// stage (ZB-V, DualPipeV).
func VPlacement(p int) []int {
	pl := make([]int, 2*p)
	for s := range pl {
		if s < p {
			pl[s] = s
		} else {
			pl[s] = 2*p - 1 - s
		}
	}
	return pl
}
