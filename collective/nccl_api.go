package collective

import (
	"errors"
	"fmt"

	"github.com/pplaunch/pplaunch/cbits"
)

// NCCLAPI is what the NCCL backend calls: NCCL and the few CUDA runtime calls
// for its stream and events. ncclLibs adapts the real libraries;
// collective/ncclfake is an in-process fake beside it, for tests. Every method is called on the device's
// thread (DeviceThread.Call), except UniqueID, which needs no device.
type NCCLAPI interface {
	UniqueID() (cbits.NCCLUniqueID, error)
	CommInitRank(nranks int, id cbits.NCCLUniqueID, rank int, blocking bool) (cbits.NCCLComm, error)
	CommSplit(comm cbits.NCCLComm, color, key int, blocking bool) (cbits.NCCLComm, error)
	Send(buf cbits.DevPtr, count int, dtype cbits.NCCLDataType, peer int, comm cbits.NCCLComm, s cbits.Stream) error
	Recv(buf cbits.DevPtr, count int, dtype cbits.NCCLDataType, peer int, comm cbits.NCCLComm, s cbits.Stream) error
	AllReduce(send, recv cbits.DevPtr, count int, dtype cbits.NCCLDataType, op cbits.NCCLRedOp, comm cbits.NCCLComm, s cbits.Stream) error
	Broadcast(send, recv cbits.DevPtr, count int, dtype cbits.NCCLDataType, root int, comm cbits.NCCLComm, s cbits.Stream) error
	GroupStart() error
	GroupEnd() error
	CommGetAsyncError(comm cbits.NCCLComm) error
	CommAbort(comm cbits.NCCLComm) error
	CommDestroy(comm cbits.NCCLComm) error

	StreamCreate() (cbits.Stream, error)
	StreamDestroy(s cbits.Stream) error
	EventCreate() (cbits.Event, error)
	EventDestroy(e cbits.Event) error
	EventRecord(e cbits.Event, s cbits.Stream) error
	EventQuery(e cbits.Event) (bool, error)
	StreamWaitEvent(s cbits.Stream, e cbits.Event) error
	Malloc(bytes int) (cbits.DevPtr, error)
	Free(p cbits.DevPtr) error
}

// ncclLibs is the real NCCLAPI.
type ncclLibs struct {
	n *cbits.NCCLLib
	c *cbits.CUDALibs
}

func (l ncclLibs) UniqueID() (cbits.NCCLUniqueID, error) { return l.n.UniqueID() }
func (l ncclLibs) CommInitRank(nranks int, id cbits.NCCLUniqueID, rank int, blocking bool) (cbits.NCCLComm, error) {
	return l.n.CommInitRank(nranks, id, rank, blocking)
}
func (l ncclLibs) CommSplit(comm cbits.NCCLComm, color, key int, blocking bool) (cbits.NCCLComm, error) {
	return l.n.CommSplit(comm, color, key, blocking)
}
func (l ncclLibs) Send(buf cbits.DevPtr, count int, dtype cbits.NCCLDataType, peer int, comm cbits.NCCLComm, s cbits.Stream) error {
	return l.n.Send(buf, count, dtype, peer, comm, s)
}
func (l ncclLibs) Recv(buf cbits.DevPtr, count int, dtype cbits.NCCLDataType, peer int, comm cbits.NCCLComm, s cbits.Stream) error {
	return l.n.Recv(buf, count, dtype, peer, comm, s)
}
func (l ncclLibs) AllReduce(send, recv cbits.DevPtr, count int, dtype cbits.NCCLDataType, op cbits.NCCLRedOp, comm cbits.NCCLComm, s cbits.Stream) error {
	return l.n.AllReduce(send, recv, count, dtype, op, comm, s)
}
func (l ncclLibs) Broadcast(send, recv cbits.DevPtr, count int, dtype cbits.NCCLDataType, root int, comm cbits.NCCLComm, s cbits.Stream) error {
	return l.n.Broadcast(send, recv, count, dtype, root, comm, s)
}
func (l ncclLibs) GroupStart() error                               { return l.n.GroupStart() }
func (l ncclLibs) GroupEnd() error                                 { return l.n.GroupEnd() }
func (l ncclLibs) CommGetAsyncError(comm cbits.NCCLComm) error     { return l.n.CommGetAsyncError(comm) }
func (l ncclLibs) CommAbort(comm cbits.NCCLComm) error             { return l.n.CommAbort(comm) }
func (l ncclLibs) CommDestroy(comm cbits.NCCLComm) error           { return l.n.CommDestroy(comm) }
func (l ncclLibs) StreamCreate() (cbits.Stream, error)             { return l.c.StreamCreate() }
func (l ncclLibs) StreamDestroy(s cbits.Stream) error              { return l.c.StreamDestroy(s) }
func (l ncclLibs) EventCreate() (cbits.Event, error)               { return l.c.EventCreate() }
func (l ncclLibs) EventDestroy(e cbits.Event) error                { return l.c.EventDestroy(e) }
func (l ncclLibs) EventRecord(e cbits.Event, s cbits.Stream) error { return l.c.EventRecord(e, s) }
func (l ncclLibs) EventQuery(e cbits.Event) (bool, error)          { return l.c.EventQuery(e) }
func (l ncclLibs) StreamWaitEvent(s cbits.Stream, e cbits.Event) error {
	return l.c.StreamWaitEvent(s, e)
}
func (l ncclLibs) Malloc(bytes int) (cbits.DevPtr, error) { return l.c.Malloc(bytes) }
func (l ncclLibs) Free(p cbits.DevPtr) error              { return l.c.Free(p) }

// DeviceThread runs closures on the one OS thread that owns a GPU, where
// every CUDA and NCCL call for it is made. The CUDA tensor backend is one
// (its device thread, its compute stream); NewDeviceThread makes a bare one
// for programs without tensors (benchmarks, checks).
type DeviceThread interface {
	// Call runs f on the device's thread after everything queued there
	// before, and returns its error.
	Call(f func() error) error
	// ComputeStream is the cudaStream_t that compute is queued on: sends
	// start after the work queued on it so far, receives do not overwrite
	// a buffer that work may still read.
	ComputeStream() uintptr
}

// bareDevice is a DeviceThread with its own locked thread and stream.
type bareDevice struct {
	th     *cbits.Thread
	stream cbits.Stream
	c      *cbits.CUDALibs
}

// NewDeviceThread locks a new OS thread to GPU dev and creates a compute
// stream on it. Stop ends it.
func NewDeviceThread(c *cbits.CUDALibs, dev int) (interface {
	DeviceThread
	Stop()
}, error) {
	d := &bareDevice{c: c}
	th, err := cbits.StartThread(0, func() error {
		err := c.SetDevice(dev)
		if err == nil {
			d.stream, err = c.StreamCreate()
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("device %d: %w", dev, err)
	}
	d.th = th
	return d, nil
}

func (d *bareDevice) Call(f func() error) error { return d.th.Call(f) }

func (d *bareDevice) ComputeStream() uintptr { return uintptr(d.stream) }

func (d *bareDevice) Stop() {
	_ = d.Call(func() error {
		_ = d.c.StreamSynchronize(d.stream)
		return d.c.StreamDestroy(d.stream)
	})
	d.th.Stop()
}

func asCUDAError(err error, target **cbits.CUDAError) bool { return errors.As(err, target) }
