package collective

import (
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
)

// mailbox matches the messages from one peer to the receives posted for them.
// A message goes to the oldest posted receive with the same group and tag; a
// message that finds none waits in arrival order (unexpected) until one is
// posted. Receives posted before their message arrives get the payload
// written straight into their buffer.
type mailbox struct {
	mu         sync.Mutex
	posted     []*op
	unexpected []*inMsg
	err        error // set when the link from this peer is gone; new receives fail with it
	pool       *stagingPool
}

// inMsg is a message that arrived before its receive was posted. Its payload
// is staged in data; received counts the bytes staged so far (the TCP reader
// fills it in pieces).
type inMsg struct {
	hdr      header
	data     []byte
	received int
	complete bool
	bound    *op  // receive posted while the payload was still arriving
	drop     bool // the bound receive failed (shape mismatch): discard the payload
}

func sameKey(o *op, h *header) bool { return o.group == h.group && o.tag == h.tag }

// mismatch is the error a receive gets when the message's dtype or shape is not
// what it expects. It names both ranks and both shapes.
func mismatch(o *op, self int, h *header) error {
	return fmt.Errorf("rank %d expected %s%v but rank %d sent %s%v",
		self, o.buf.DType, o.buf.Shape, o.peer, h.dtype, slices.Clone(h.shape()))
}

// post files receive o. If a matching message already arrived, it is delivered
// (or bound to o, when its payload is still arriving).
func (m *mailbox) post(o *op, self int) {
	m.mu.Lock()
	for i, msg := range m.unexpected {
		if msg.bound != nil || msg.drop || !sameKey(o, &msg.hdr) {
			continue
		}
		if !msg.hdr.matches(o.buf) {
			if msg.complete {
				m.unexpected = slices.Delete(m.unexpected, i, i+1)
				m.pool.put(msg.data)
			} else {
				msg.drop = true
			}
			m.mu.Unlock()
			o.finish(mismatch(o, self, &msg.hdr))
			return
		}
		if !msg.complete {
			msg.bound = o
			m.mu.Unlock()
			return
		}
		m.unexpected = slices.Delete(m.unexpected, i, i+1)
		m.mu.Unlock()
		copy(o.buf.bytes(), msg.data)
		m.pool.put(msg.data)
		o.finish(nil)
		return
	}
	if m.err != nil {
		err := m.err
		m.mu.Unlock()
		o.finish(err)
		return
	}
	m.posted = append(m.posted, o)
	m.mu.Unlock()
	m.pool.poke() // a reader held back by the staging limit may now deliver
}

// arrive is called when header h comes in. It returns the posted receive that
// takes the message (removed from the posted list), or nil after filing the
// message as unexpected with a staging buffer for its payload. ok is false,
// and nothing is filed, when no receive is posted and the staging pool is at
// its limit.
func (m *mailbox) arrive(h *header) (o *op, msg *inMsg, ok bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for i, o := range m.posted {
		if sameKey(o, h) {
			m.posted = slices.Delete(m.posted, i, i+1)
			return o, nil, true
		}
	}
	data, ok := m.pool.get(h.nbytes)
	if !ok {
		return nil, nil, false
	}
	msg = &inMsg{hdr: *h, data: data}
	m.unexpected = append(m.unexpected, msg)
	return nil, msg, true
}

// withdraw removes receive o if it is still waiting for its message and reports
// whether it did. A receive that a message has already taken is not withdrawn.
func (m *mailbox) withdraw(o *op) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if i := slices.Index(m.posted, o); i >= 0 {
		m.posted = slices.Delete(m.posted, i, i+1)
		return true
	}
	return false
}

// fail marks the link from this peer as gone: every posted receive fails with
// err, and so does every later receive that no staged message satisfies.
// Receives bound to messages that were still arriving fail too.
func (m *mailbox) fail(err error) {
	m.mu.Lock()
	if m.err == nil {
		m.err = err
	}
	posted := m.posted
	m.posted = nil
	var bound []*op
	kept := m.unexpected[:0]
	for _, msg := range m.unexpected {
		if msg.complete && !msg.drop {
			kept = append(kept, msg)
			continue
		}
		if msg.bound != nil {
			bound = append(bound, msg.bound)
		}
		m.pool.forget(len(msg.data)) // never completed; its writer may still hold the buffer
	}
	m.unexpected = kept
	m.mu.Unlock()
	for _, o := range posted {
		o.finish(err)
	}
	for _, o := range bound {
		o.finish(err)
	}
}

// stagingPool holds the payloads of unexpected messages. It recycles their
// buffers, so that a steady stream of them does not allocate, and it bounds
// the bytes they hold: past limit (when positive), get refuses and the TCP
// reader stops reading that peer until a receive is posted or staged bytes are
// freed, so a sender running far ahead is held back by TCP instead of growing
// the receiver's memory without end.
type stagingPool struct {
	limit int

	mu      sync.Mutex
	free    [][]byte
	held    int    // bytes of buffers handed out and not yet put back
	gen     uint64 // counts changes a held-back reader waits for
	waiters atomic.Int32
	cond    sync.Cond
}

func newStagingPool(limit int) *stagingPool {
	p := &stagingPool{limit: limit}
	p.cond.L = &p.mu
	return p
}

// get returns a buffer of n bytes, or false if it would take the bytes held
// past the limit. One message is always staged when nothing else is, however
// large, so a limit below a message's size slows but never stops the link.
func (p *stagingPool) get(n int) ([]byte, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.limit > 0 && p.held > 0 && p.held+n > p.limit {
		return nil, false
	}
	p.held += n
	best := -1
	for i, b := range p.free {
		if cap(b) >= n && (best < 0 || cap(b) < cap(p.free[best])) {
			best = i
		}
	}
	if best < 0 {
		return make([]byte, n), true
	}
	b := p.free[best]
	p.free = slices.Delete(p.free, best, best+1)
	return b[:n], true
}

// put returns b (from get) to the pool, which keeps at most 8 buffers and
// 1 GiB for reuse.
func (p *stagingPool) put(b []byte) {
	p.mu.Lock()
	p.held -= len(b)
	p.gen++
	if c := cap(b); c > 0 {
		total := c
		for _, f := range p.free {
			total += cap(f)
		}
		if len(p.free) < 8 && total <= 1<<30 {
			p.free = append(p.free, b)
		}
	}
	p.mu.Unlock()
	if p.waiters.Load() > 0 {
		p.cond.Broadcast()
	}
}

// forget releases n bytes of a buffer that is dropped rather than put back.
func (p *stagingPool) forget(n int) {
	p.mu.Lock()
	p.held -= n
	p.gen++
	p.mu.Unlock()
	if p.waiters.Load() > 0 {
		p.cond.Broadcast()
	}
}

// poke wakes readers held back by the limit: a receive was posted or a link
// broke. It costs one atomic load when none is held back.
func (p *stagingPool) poke() {
	if p.waiters.Load() == 0 {
		return
	}
	p.mu.Lock()
	p.gen++
	p.mu.Unlock()
	p.cond.Broadcast()
}

// generation and waitChange let a held-back reader sleep until something it
// may be waiting for changed since generation returned g, or stop says so.
func (p *stagingPool) generation() uint64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.gen
}

func (p *stagingPool) waitChange(g uint64, stop func() bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.waiters.Add(1)
	for p.gen == g && !stop() {
		p.cond.Wait()
	}
	p.waiters.Add(-1)
}

// heldBytes is how many bytes staged messages hold now.
func (p *stagingPool) heldBytes() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.held
}

// deliverLocal hands send s (from rank from) to the mailbox box of the
// receiving rank self, within one process: straight into a posted receive's
// buffer, or into a staged copy. The send is complete once it returns.
func deliverLocal(box *mailbox, s *op, self int) {
	h := &s.hdr
	r, msg, _ := box.arrive(h) // in-process pools have no limit
	switch {
	case r == nil:
		copy(msg.data, s.buf.bytes())
		box.mu.Lock()
		msg.complete, msg.received = true, h.nbytes
		bound, drop := msg.bound, msg.drop
		if bound != nil || drop {
			box.unexpected = slices.DeleteFunc(box.unexpected, func(m *inMsg) bool { return m == msg })
		}
		box.mu.Unlock()
		if bound != nil {
			copy(bound.buf.bytes(), msg.data)
			bound.finish(nil)
		}
		if bound != nil || drop {
			box.pool.put(msg.data)
		}
	case !h.matches(r.buf):
		r.finish(mismatch(r, self, h))
	default:
		copy(r.buf.bytes(), s.buf.bytes())
		r.finish(nil)
	}
	s.finish(nil)
}
