package stageloop

import (
	"context"
	"fmt"

	"github.com/pplaunch/pplaunch/collective"
	"github.com/pplaunch/pplaunch/models/tensor"
)

// Mover moves tensors of the rank's backend through the communicator, each
// in its dtype (bfloat16 activations as two bytes an element). Host
// tensors (the CPU backend) go as they are: the communicator reads and
// writes their values, with no copy. Device tensors (a backend whose
// Memory.HostStaging is not nil) go through pinned host buffers: a send is copied out on the backend's copy
// stream after the compute that made it and goes on the wire from a
// goroutine of its own once the copy is done, so compute goes on meanwhile;
// a receive lands in a pinned buffer, is copied in on the copy stream as soon
// as it has arrived (land), and the compute that needs it waits for that
// copy on the device (Wait). A communicator that moves device memory itself
// (NCCL) gets the device tensors as they are: it orders its transfers
// against the backend's compute stream, and a request list is one group.
type Mover struct {
	comm collective.Comm
	stg  tensor.PinnedStaging // nil: host tensors, or a communicator of device memory
	dev  tensor.Device        // set when comm moves device memory
}

// NewMover moves be's tensors through device when it is set (Job.DeviceComm),
// else through host; be nil is host tensors.
func NewMover(host, device collective.Comm, be tensor.Memory) Mover {
	comm := host
	if device != nil {
		comm = device
	}
	if be == nil {
		return Mover{comm: comm}
	}
	if comm.MovesDevice() {
		return Mover{comm: comm, dev: be.Device()}
	}
	return Mover{comm: comm, stg: be.HostStaging()}
}

// Req is one send of t, or receive into t.
type Req struct {
	recv bool
	peer int
	tag  collective.Tag
	t    *tensor.Tensor
}

func SendReq(peer int, tag collective.Tag, t *tensor.Tensor) Req {
	return Req{peer: peer, tag: tag, t: t}
}

func RecvReq(peer int, tag collective.Tag, t *tensor.Tensor) Req {
	return Req{recv: true, peer: peer, tag: tag, t: t}
}

// hostBuffer is a host tensor's values as a message of its dtype: a
// bfloat16 tensor travels as two bytes an element.
func hostBuffer(t *tensor.Tensor) collective.Buffer {
	if t.DType() == tensor.BFloat16 {
		return collective.BF16(t.Half, t.Shape...)
	}
	return collective.F32(t.Data, t.Shape...)
}

// stagedBuffer is the pinned host buffer s as a message of t's dtype and
// shape.
func stagedBuffer(s *tensor.Staging, t *tensor.Tensor) collective.Buffer {
	if t.DType() == tensor.BFloat16 {
		return collective.BF16(s.Half[:t.Len()], t.Shape...)
	}
	return collective.F32(s.Host[:t.Len()], t.Shape...)
}

// WireDType is the message dtype of tensors of dtype dt.
func WireDType(dt tensor.DType) collective.DType {
	if dt == tensor.BFloat16 {
		return collective.BFloat16
	}
	return collective.Float32
}

func (r Req) opOf(b collective.Buffer) collective.Op {
	if r.recv {
		return collective.RecvOp(r.peer, r.tag, b)
	}
	return collective.SendOp(r.peer, r.tag, b)
}

// Move is one staged move of device tensors: a set of requests in
// flight. Its methods are for the one goroutine that queues the compute.
type Move struct {
	stg     tensor.PinnedStaging
	h       *collective.Handle // the receives; for host tensors, everything
	sent    chan struct{}      // staged sends: closed when they are done or failed
	sendErr error
	recvs   []landing // staged receives
	landed  bool
}

// landing is a staged receive: where it arrives and where it goes.
type landing struct {
	t *tensor.Tensor
	s *tensor.Staging
}

// Start posts reqs. ctx bounds the staged sends' goroutine (the
// communicator's own timeout bounds each wait in it as well).
func (x Mover) Start(ctx context.Context, reqs ...Req) *Move {
	tr := &Move{stg: x.stg}
	if x.comm.MovesDevice() {
		ops := make([]collective.Op, len(reqs))
		for i, r := range reqs {
			ops[i] = r.opOf(collective.OnDevice(WireDType(r.t.DType()), x.dev.DevicePtr(r.t), r.t.Len(), r.t.Shape...))
		}
		tr.h = x.comm.Batch(ops...)
		return tr
	}
	if x.stg == nil {
		if len(reqs) == 1 { // as a Batch of one, but without the batch's bookkeeping
			r := reqs[0]
			if r.recv {
				tr.h = x.comm.Irecv(r.peer, r.tag, hostBuffer(r.t))
			} else {
				tr.h = x.comm.Isend(r.peer, r.tag, hostBuffer(r.t))
			}
			return tr
		}
		ops := make([]collective.Op, len(reqs))
		for i, r := range reqs {
			ops[i] = r.opOf(hostBuffer(r.t))
		}
		tr.h = x.comm.Batch(ops...)
		return tr
	}
	var recvs, sends []collective.Op
	var outs []*tensor.Staging
	for _, r := range reqs {
		if r.recv {
			s := x.stg.PinnedAs(r.t.DType(), r.t.Len()) // a bfloat16 tensor lands in 2-byte values
			tr.recvs = append(tr.recvs, landing{r.t, s})
			recvs = append(recvs, r.opOf(stagedBuffer(s, r.t)))
		} else {
			s := x.stg.StageOut(r.t)
			outs = append(outs, s)
			sends = append(sends, r.opOf(stagedBuffer(s, r.t)))
		}
	}
	if len(recvs) > 0 {
		tr.h = x.comm.Batch(recvs...)
	}
	if len(sends) > 0 {
		tr.sent = make(chan struct{})
		go tr.send(ctx, x.comm, outs, sends)
	}
	return tr
}

// send puts staged sends on the wire once their copies are done. On a
// failure the pinned buffers are not reused: the transport may still read
// them until the communicator is aborted.
func (tr *Move) send(ctx context.Context, comm collective.Comm, outs []*tensor.Staging, ops []collective.Op) {
	defer close(tr.sent)
	for _, s := range outs {
		if err := s.Wait(ctx); err != nil {
			tr.sendErr = err
			return
		}
	}
	if err := comm.Batch(ops...).Wait(ctx); err != nil {
		tr.sendErr = err
		return
	}
	for _, s := range outs {
		s.Release()
	}
}

// ready reports, without waiting, whether everything has finished.
func (tr *Move) ready() bool {
	if tr.h != nil {
		select {
		case <-tr.h.Done():
		default:
			return false
		}
	}
	if tr.sent != nil {
		select {
		case <-tr.sent:
		default:
			return false
		}
	}
	return true
}

// land starts copying staged receives that have arrived to the device.
func (tr *Move) land() {
	if !tr.landed && len(tr.recvs) > 0 && tr.ready() && tr.h.Err() == nil {
		tr.stageIn()
	}
}

func (tr *Move) stageIn() {
	for _, l := range tr.recvs {
		tr.stg.StageIn(l.t, l.s)
	}
	tr.landed = true
}

// Wait waits for every request; the compute queued afterwards sees the
// received values. It is called once.
func (tr *Move) Wait(ctx context.Context) error {
	if tr.h != nil {
		if err := tr.h.Wait(ctx); err != nil {
			return err
		}
	}
	if tr.sent != nil {
		select {
		case <-tr.sent:
			if tr.sendErr != nil {
				return fmt.Errorf("staged send: %w", tr.sendErr)
			}
		case <-ctx.Done():
			return fmt.Errorf("staged send: %w", ctx.Err())
		}
	}
	if !tr.landed {
		tr.stageIn()
	}
	for _, l := range tr.recvs {
		l.s.Await()
		l.s.Release()
	}
	tr.recvs, tr.h = nil, nil
	return nil
}
