package tensor

import (
	"context"
	"fmt"
	"sync"
	"time"
	"unsafe"
)

// PinnedStaging is a backend whose tensors a host transport (TCP) cannot read or
// write: transfers go through pinned host buffers, copied on a stream of the
// backend's own beside the compute stream and ordered against it by events,
// so that a copy overlaps the compute queued after it. The CPU backend is no
// PinnedStaging: a transport reads and writes its tensors' Data directly.
type PinnedStaging interface {
	// StageOut starts copying t to a pinned host buffer of t's dtype once
	// the work queued so far (the compute that writes t) is done. Wait for
	// the result before reading its Host (float32) or Half (bfloat16)
	// values, and do not free or overwrite t before that.
	StageOut(t *Tensor) *Staging
	// Pinned returns a pinned host buffer of n float32 values to receive into.
	Pinned(n int) *Staging
	// PinnedAs returns a pinned host buffer of n values of the dtype (Host
	// for float32, Half for bfloat16: 2 bytes a value).
	PinnedAs(dt DType, n int) *Staging
	// StageIn starts copying s's values into t (as many as t holds; s has
	// t's dtype) once the work queued so far (which may still read t) is
	// done. The compute that reads t must come after s.Await.
	StageIn(t *Tensor, s *Staging)
}

// Staging is a pinned host buffer and the copy between it and a device
// tensor that is in flight, if any. Its methods are for one goroutine at a
// time.
type Staging struct {
	// Host holds a float32 buffer's values, Half a bfloat16 buffer's (the
	// other is nil): written by the copy of StageOut (after Wait), read by
	// the copy of StageIn.
	Host []float32
	Half []uint16
	c    *CUDA
	b    *pinned
	up   bool // StageIn queued an upload from Host
	rel  bool
}

// pinned is one page-locked host buffer with the events of its last copy:
// after marks the compute the copy waits for, done the copy's end.
type pinned struct {
	p          unsafe.Pointer
	bytes      int // its size class
	after      cuEvent
	done       cuEvent
	busy       bool // a copy may still use it: sync done before reuse
	copyQueued bool // a copy was queued since it was handed out
	seenDone   bool // and was seen finished
}

// stager is the CUDA backend's copy stream and pool of pinned buffers.
type stager struct {
	once   sync.Once
	err    error
	stream cuStream

	mu   sync.Mutex
	free map[int][]*pinned
	all  []*pinned
}

// copyStream creates the copy stream at first use.
func (c *CUDA) copyStream() cuStream {
	c.stg.once.Do(func() {
		c.stg.free = map[int][]*pinned{}
		c.stg.err = c.dev.call(func() (err error) { c.stg.stream, err = c.dev.api.StreamCreate(); return err })
	})
	if c.stg.err != nil {
		panic(fmt.Sprintf("cuda backend: copy stream: %v", c.stg.err))
	}
	return c.stg.stream
}

// Pinned returns a pinned buffer of n float32 values.
func (c *CUDA) Pinned(n int) *Staging { return c.PinnedAs(Float32, n) }

// PinnedAs returns a pinned buffer of n values of the dtype from the pool, or
// a new one. A buffer an upload may still read is waited for first.
func (c *CUDA) PinnedAs(dt DType, n int) *Staging {
	c.copyStream()
	cl := sizeClass(max(n, 1) * dt.Size())
	c.stg.mu.Lock()
	var b *pinned
	if l := c.stg.free[cl]; len(l) > 0 {
		b = l[len(l)-1]
		c.stg.free[cl] = l[:len(l)-1]
	}
	c.stg.mu.Unlock()
	var err error
	if b == nil {
		b = &pinned{bytes: cl}
		err = c.dev.call(func() (err error) {
			if b.p, err = c.dev.api.MallocHost(cl); err != nil {
				return err
			}
			if b.after, err = c.dev.api.EventCreate(); err != nil {
				return err
			}
			b.done, err = c.dev.api.EventCreate()
			return err
		})
		if err == nil {
			c.stg.mu.Lock()
			c.stg.all = append(c.stg.all, b)
			c.stg.mu.Unlock()
		}
	} else if b.busy {
		err = c.dev.call(func() error { return c.dev.api.EventSynchronize(b.done) })
	}
	b.busy, b.copyQueued, b.seenDone = false, false, false
	if err != nil {
		panic(fmt.Sprintf("cuda backend: pinned buffer of %d bytes: %v", cl, err))
	}
	if dt == BFloat16 {
		return &Staging{Half: unsafe.Slice((*uint16)(b.p), n), c: c, b: b}
	}
	return &Staging{Host: unsafe.Slice((*float32)(b.p), n), c: c, b: b}
}

// values is how many values s holds, of which dtype.
func (s *Staging) values() (DType, int) {
	if s.Half != nil {
		return BFloat16, len(s.Half)
	}
	return Float32, len(s.Host)
}

// StageOut queues, on the copy stream, the copy of t to a pinned buffer
// after the compute queued so far.
func (c *CUDA) StageOut(t *Tensor) *Staging {
	p := c.ptrAny("stage out", t)
	s := c.PinnedAs(t.dtype, t.Len())
	b, cs, n := s.b, c.stg.stream, int(t.Bytes())
	b.copyQueued = true
	c.dev.enqueue("stage out", func() error {
		if err := c.dev.api.EventRecord(b.after, c.dev.stream); err != nil {
			return err
		}
		if err := c.dev.api.StreamWaitEvent(cs, b.after); err != nil {
			return err
		}
		if n > 0 {
			if err := c.dev.api.MemcpyDtoHAsync(b.p, p, n, cs); err != nil {
				return err
			}
		}
		return c.dev.api.EventRecord(b.done, cs)
	})
	return s
}

// StageIn queues, on the copy stream, the copy of s.Host into t after the
// compute queued so far.
func (c *CUDA) StageIn(t *Tensor, s *Staging) {
	p := c.ptrAny("stage in", t)
	if s.c != c || s.rel {
		panic("stage in: the staging buffer is released or belongs to another backend")
	}
	dt, have := s.values()
	if dt != t.dtype {
		panic(fmt.Sprintf("stage in: a %v buffer into %v: stage through PinnedAs(%v, n)", dt, t, t.dtype))
	}
	if have < t.Len() {
		panic(fmt.Sprintf("stage in: %d host values into %v (%d elements)", have, t.Shape, t.Len()))
	}
	b, cs, n := s.b, c.stg.stream, int(t.Bytes())
	s.up, b.copyQueued, b.seenDone = true, true, false
	c.dev.enqueue("stage in", func() error {
		if err := c.dev.api.EventRecord(b.after, c.dev.stream); err != nil {
			return err
		}
		if err := c.dev.api.StreamWaitEvent(cs, b.after); err != nil {
			return err
		}
		if n > 0 {
			if err := c.dev.api.MemcpyHtoDAsync(p, b.p, n, cs); err != nil {
				return err
			}
		}
		return c.dev.api.EventRecord(b.done, cs)
	})
}

// Ready reports whether s's copy has finished (true when there is none).
func (s *Staging) Ready() (bool, error) {
	if !s.b.copyQueued || s.b.seenDone {
		return true, nil
	}
	var done bool
	err := s.c.dev.call(func() (err error) { done, err = s.c.dev.api.EventQuery(s.b.done); return err })
	s.b.seenDone = done && err == nil
	return done, err
}

// Wait waits until s's copy has finished, polling so that the device thread
// keeps taking the compute queued meanwhile.
func (s *Staging) Wait(ctx context.Context) error {
	pause := 20 * time.Microsecond
	for {
		done, err := s.Ready()
		if err != nil || done {
			return err
		}
		t := time.NewTimer(pause)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("device copy: %w", ctx.Err())
		case <-t.C:
		}
		pause = min(2*pause, time.Millisecond)
	}
}

// Await makes the work queued on the compute stream from now on wait, on the
// device, for s's upload (StageIn); the host does not wait.
func (s *Staging) Await() {
	if !s.up {
		return
	}
	b, c := s.b, s.c
	c.dev.enqueue("await upload", func() error { return c.dev.api.StreamWaitEvent(c.dev.stream, b.done) })
}

// Release gives the buffer back to the pool; s must not be used afterwards.
// A copy from or into it may still run: the buffer is reused only after it.
func (s *Staging) Release() {
	if s.rel {
		panic("staging buffer released twice")
	}
	s.rel = true
	s.b.busy = s.b.copyQueued && !s.b.seenDone
	s.Host, s.Half = nil, nil
	st := &s.c.stg
	st.mu.Lock()
	st.free[s.b.bytes] = append(st.free[s.b.bytes], s.b)
	st.mu.Unlock()
}

// closeStaging frees the pinned buffers, their events and the copy stream
// (after the device is idle).
func (c *CUDA) closeStaging() {
	st := &c.stg
	if st.stream == 0 {
		return
	}
	_ = c.dev.call(func() error {
		_ = c.dev.api.StreamSynchronize(st.stream)
		for _, b := range st.all {
			_ = c.dev.api.EventDestroy(b.after)
			_ = c.dev.api.EventDestroy(b.done)
			_ = c.dev.api.FreeHost(b.p)
		}
		return c.dev.api.StreamDestroy(st.stream)
	})
	st.all, st.free, st.stream = nil, map[int][]*pinned{}, 0
}

var _ PinnedStaging = (*CUDA)(nil)
