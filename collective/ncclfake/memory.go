package ncclfake

import (
	"fmt"
	"sync"

	"github.com/pplaunch/pplaunch/cbits"
)

// Memory is the device memory the fake moves. The fake calls Copy, Read and
// Write while it pairs operations (under its lock, on any rank's device
// thread), each done when it returns; Await on the device thread of the
// rank whose stream it is.
type Memory interface {
	Malloc(bytes int) (cbits.DevPtr, error)
	Free(p cbits.DevPtr) error
	Copy(dst, src cbits.DevPtr, bytes int) error
	Read(src cbits.DevPtr, b []byte) error
	Write(dst cbits.DevPtr, b []byte) error
	// Await returns once the work queued so far on s, a stream the fake
	// did not create (a device's compute stream), is done.
	Await(s cbits.Stream) error
}

// HostMemory is device memory as host memory behind fake addresses, with
// no work on any stream (Await returns at once).
type HostMemory struct {
	mu   sync.Mutex
	next uintptr
	mem  map[cbits.DevPtr][]byte
}

func NewHostMemory() *HostMemory {
	return &HostMemory{next: 1 << 40, mem: map[cbits.DevPtr][]byte{}}
}

func (m *HostMemory) Malloc(n int) (cbits.DevPtr, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.next += uintptr(n+0xfff) &^ 0xfff
	m.next += 0x1000
	p := cbits.DevPtr(m.next)
	m.mem[p] = make([]byte, n)
	return p, nil
}

func (m *HostMemory) Free(p cbits.DevPtr) error { return nil }

// at is the n bytes at p, which must lie in one allocation's start.
func (m *HostMemory) at(p cbits.DevPtr, n int) ([]byte, error) {
	b, ok := m.mem[p]
	if !ok || n > len(b) {
		return nil, fmt.Errorf("ncclfake: %d bytes at %#x: not an allocation of that size", n, uintptr(p))
	}
	return b[:n], nil
}

func (m *HostMemory) Copy(dst, src cbits.DevPtr, n int) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	d, err := m.at(dst, n)
	if err != nil {
		return err
	}
	s, err := m.at(src, n)
	if err != nil {
		return err
	}
	copy(d, s)
	return nil
}

func (m *HostMemory) Read(src cbits.DevPtr, b []byte) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, err := m.at(src, len(b))
	if err == nil {
		copy(b, s)
	}
	return err
}

func (m *HostMemory) Write(dst cbits.DevPtr, b []byte) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	d, err := m.at(dst, len(b))
	if err == nil {
		copy(d, b)
	}
	return err
}

func (m *HostMemory) Await(cbits.Stream) error { return nil }

// Device is a device thread for the fake (a collective.DeviceThread): one
// goroutine, one stream of the fake as its compute stream.
type Device struct {
	work   chan func()
	stream cbits.Stream
}

// NewDevice starts r's device thread; Stop ends it.
func NewDevice(r *Rank) *Device {
	d := &Device{work: make(chan func())}
	d.stream, _ = r.StreamCreate()
	go func() {
		for f := range d.work {
			f()
		}
	}()
	return d
}

func (d *Device) Call(f func() error) error {
	done := make(chan error, 1)
	d.work <- func() { done <- f() }
	return <-done
}

func (d *Device) ComputeStream() uintptr { return uintptr(d.stream) }
func (d *Device) Stop()                  { close(d.work) }
