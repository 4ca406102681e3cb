package stageloop

import (
	"github.com/pplaunch/pplaunch/collective"
	"github.com/pplaunch/pplaunch/schedules"
)

// messageKind is the kind and chunk of transfer action a's tag; ok is
// false for a compute.
func messageKind(a schedules.Action) (kind collective.Kind, chunk uint16, ok bool) {
	switch a.Kind {
	case schedules.RecvF:
		return collective.Activation, uint16(a.Stage), true
	case schedules.SendF:
		return collective.Activation, uint16(a.Stage + 1), true
	case schedules.RecvB:
		return collective.Gradient, uint16(a.Stage), true
	case schedules.SendB:
		return collective.Gradient, uint16(a.Stage - 1), true
	}
	return 0, 0, false
}

// MessageKinds is every kind of message x's list sends or receives in a step
// (peers as ranks of Comm): each receive in the shape of its buffer, each
// send in the shape of what its stage makes.
func (x *Executor) MessageKinds() []collective.Transfer {
	me := x.Comm.Rank()
	var ts []collective.Transfer
	for _, a := range x.Sched.Ranks[x.PRank] {
		kind, chunk, ok := messageKind(a)
		st := x.Stages[a.Stage]
		if !ok || st == nil {
			continue
		}
		peer := x.Peer(x.Sched.Peer(a))
		if peer == me {
			continue
		}
		// RECV_F and SEND_B move the stage's input (or its gradient),
		// RECV_B and SEND_F its output.
		in := a.Kind == schedules.RecvF || a.Kind == schedules.SendB
		send := a.Kind == schedules.SendF || a.Kind == schedules.SendB
		ts = append(ts, collective.Transfer{Send: send, Peer: peer, Kind: kind, Chunk: chunk,
			DType: WireDType(x.Act), Shape: IOShape(st, x.MicroSize, in)})
	}
	return ts
}
