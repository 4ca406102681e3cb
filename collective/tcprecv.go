package collective

import (
	"errors"
	"fmt"
	"io"
	"runtime"
	"slices"
	"syscall"
	"time"
)

// The receiving half of a link: one reader goroutine per peer reads each
// frame's header, finds the posted receive (or stages the message), and reads
// the payload straight into place.

func (p *tcpPeer) readLoop() {
	defer p.t.wg.Done()
	var hb [headerMax]byte
	for {
		p.awaitFrame()
		more, delivered := p.readFrame(hb[:])
		buffered := p.br.Buffered()
		if !more {
			return
		}
		if delivered || buffered == 0 {
			// Let the receiver just woken run before this goroutine goes
			// back to the socket: it posts its next receive (so the next
			// message lands in place, not in a staging copy) or sends its
			// reply a few µs sooner.
			runtime.Gosched()
		}
	}
}

// readFrame reads one frame and delivers it. more is false once the link is
// gone; delivered reports whether a posted receive got the message.
func (p *tcpPeer) readFrame(hb []byte) (more, delivered bool) {
	h, err := p.readHeader(hb)
	if err != nil {
		p.readFailed(err)
		return false, false
	}
	if h.tag.Kind == kindBye {
		err := fmt.Errorf("rank %d closed its communicator", p.rank)
		p.breakLink(err)
		p.box.fail(err)
		return false, false
	}
	r, msg, err := p.arrive(&h)
	if err != nil {
		p.readFailed(err)
		return false, false
	}
	if err = p.deliver(&h, r, msg); err != nil {
		p.readFailed(err)
		return false, false
	}
	return true, r != nil
}

// deliver reads the payload of the frame whose header h was just read into
// receive r, or into staged message msg.
func (p *tcpPeer) deliver(h *header, r *op, msg *inMsg) error {
	switch {
	case msg != nil:
		return p.readStaged(msg)
	case !h.matches(r.buf):
		r.finish(mismatch(r, p.t.rank, h))
		_, err := p.br.Discard(h.nbytes)
		return err
	}
	err := p.readPayload(r.buf.bytes())
	if err != nil {
		r.finish(p.readError(err))
	} else {
		r.finish(nil)
	}
	return err
}

// awaitFrame polls the socket between frames while messages come back to
// back. It returns when bytes are buffered (or a read error waits to be
// found), or when polling should give way to parking in the network poller.
// A parked reader is woken through the kernel and the Go scheduler, which
// costs a few microseconds a message; the bound keeps polling at most spinFor
// of CPU per message.
func (p *tcpPeer) awaitFrame() {
	if !p.sr.poll || p.sr.last.IsZero() || p.br.Buffered() > 0 {
		return
	}
	now := time.Now()
	if now.Sub(p.sr.last) >= spinRecent {
		return
	}
	until := now.Add(spinFor)
	for polls := 1; ; polls++ {
		if p.fillNow() {
			return
		}
		if polls%8 == 0 && time.Now().After(until) {
			return
		}
		runtime.Gosched()
	}
}

// fillNow reads what the socket holds into the frame buffer without waiting,
// and reports whether that gave the reader something to do: bytes, or an
// error to find when it reads them.
func (p *tcpPeer) fillNow() bool {
	p.sr.nowait = true
	_, err := p.br.Peek(1)
	p.sr.nowait = false
	return !errors.Is(err, errWouldBlock)
}

// arrive finds the receive for the message whose header h was just read, or
// stages it. While the staging pool is full it holds the link (TCP then holds
// the sender back) until a receive is posted, staged bytes are freed, or the
// link breaks; heldBack is set meanwhile, for the errors of receives that
// time out.
func (p *tcpPeer) arrive(h *header) (*op, *inMsg, error) {
	if r, msg, ok := p.box.arrive(h); ok {
		return r, msg, nil
	}
	defer p.heldBack.Store(false)
	for {
		g := p.t.pool.generation()
		r, msg, ok := p.box.arrive(h)
		if ok {
			return r, msg, nil
		}
		p.heldBack.Store(true)
		p.t.pool.waitChange(g, func() bool { return p.linkErr() != nil })
		if err := p.linkErr(); err != nil {
			return nil, nil, err
		}
	}
}

// directMin is the smallest rest of a payload read straight from the socket
// into its destination rather than through the frame reader's buffer, which
// would copy it once more.
const directMin = 8 << 10

// readPayload fills dst with the next bytes of the stream: what the frame
// reader has buffered, then, for a large rest, straight from the socket.
func (p *tcpPeer) readPayload(dst []byte) error {
	n := min(p.br.Buffered(), len(dst))
	if n > 0 {
		if _, err := io.ReadFull(p.br, dst[:n]); err != nil {
			return err
		}
	}
	rest := dst[n:]
	if len(rest) >= directMin {
		// Poll through a large payload too: the sender keeps the socket
		// busy, and a reader that parks each time the socket runs dry and
		// is woken again costs bandwidth from a few MiB up.
		p.sr.spin = len(rest) >= spinPayloadMin
		_, err := io.ReadFull(&p.sr, rest)
		p.sr.spin = false
		return err
	}
	_, err := io.ReadFull(p.br, rest)
	return err
}

func (p *tcpPeer) readHeader(hb []byte) (header, error) {
	if _, err := io.ReadFull(p.br, hb[:headerFixed]); err != nil {
		return header{}, err
	}
	nd := int(hb[6])
	if nd <= MaxDims {
		if _, err := io.ReadFull(p.br, hb[headerFixed:headerFixed+8*nd]); err != nil {
			return header{}, err
		}
	}
	h, _, err := decodeHeader(hb[:headerFixed+8*min(nd, MaxDims)])
	if err != nil {
		return h, fmt.Errorf("corrupt frame from rank %d: %w", p.rank, err)
	}
	return h, nil
}

// stagePiece bounds how much of an unexpected payload is read before looking
// again for a receive to hand the rest to.
const stagePiece = 256 << 10

// readStaged reads the payload of a message nobody was waiting for. If a
// receive is posted meanwhile, the part staged so far is copied to it and the
// rest is read straight into its buffer.
func (p *tcpPeer) readStaged(msg *inMsg) error {
	n := msg.hdr.nbytes
	for msg.received < n {
		p.box.mu.Lock()
		bound := msg.bound
		if bound != nil {
			p.box.unexpected = slices.DeleteFunc(p.box.unexpected, func(m *inMsg) bool { return m == msg })
		}
		p.box.mu.Unlock()
		if bound != nil {
			dst := bound.buf.bytes()
			copy(dst, msg.data[:msg.received])
			p.box.pool.put(msg.data)
			if err := p.readPayload(dst[msg.received:]); err != nil {
				bound.finish(p.readError(err))
				return err
			}
			bound.finish(nil)
			return nil
		}
		k := min(n-msg.received, stagePiece)
		if err := p.readPayload(msg.data[msg.received : msg.received+k]); err != nil {
			return err
		}
		msg.received += k
	}
	p.box.mu.Lock()
	msg.complete = true
	bound, drop := msg.bound, msg.drop
	if bound != nil || drop {
		p.box.unexpected = slices.DeleteFunc(p.box.unexpected, func(m *inMsg) bool { return m == msg })
	}
	p.box.mu.Unlock()
	if bound != nil {
		copy(bound.buf.bytes(), msg.data)
		bound.finish(nil)
	}
	if bound != nil || drop {
		p.box.pool.put(msg.data)
	}
	return nil
}

// readError turns a read failure into the error that names the peer.
func (p *tcpPeer) readError(err error) error {
	if le := p.linkErr(); le != nil {
		return le
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET) {
		return fmt.Errorf("rank %d is gone: connection closed (process exited or aborted)", p.rank)
	}
	return fmt.Errorf("connection to rank %d lost: %w", p.rank, err)
}

func (p *tcpPeer) readFailed(err error) {
	err = p.readError(err)
	p.breakLink(err)
	p.box.fail(p.linkErr())
}
