package collective

import (
	"fmt"
	"net"
	"slices"

	"golang.org/x/sys/unix"
)

// The sending half of a link: frames leave in send order through one queue,
// written inline by an idle link's sender or by the writer goroutine.

// copyMax is the largest payload copied next to its header for one write;
// larger ones are written from the caller's buffer (writev).
const copyMax = 16 << 10

// callerWriteMax is the largest frame a send writes itself when the link is
// idle; larger frames go to the writer goroutine so that Isend returns at once.
const callerWriteMax = 256 << 10

// eagerMax is the largest payload a send copies and completes before it is on
// the wire, when the link is busy; eagerLimit bounds the bytes so held per
// peer (beyond it a send waits for the wire, which slows a sender that
// outruns its receiver).
const (
	eagerMax   = 64 << 10
	eagerLimit = 4 << 20
)

// send puts o on its way. With fast false (the goodbye frame), o is queued
// and completes only once written, neither inline nor eager.
func (p *tcpPeer) send(o *op, fast bool) {
	p.qmu.Lock()
	if p.werr != nil {
		err := p.werr
		p.qmu.Unlock()
		o.finish(err)
		return
	}
	var f outFrame
	if fast && !p.busy && len(p.queue) == 0 && o.hdr.nbytes <= callerWriteMax {
		p.busy = true
		p.qmu.Unlock()
		n, total, err := p.tryWrite(o)
		p.qmu.Lock()
		p.busy = false
		if err != nil || n == total {
			more := len(p.queue) > 0
			p.qmu.Unlock()
			if more {
				p.wake()
			}
			p.wrote(o, err)
			return
		}
		// The socket is full: the rest of the frame goes first.
		f = p.frameFor(o, fast)
		f.off = n
		p.queue = slices.Insert(p.queue, 0, f)
	} else {
		f = p.frameFor(o, fast)
		p.queue = append(p.queue, f)
	}
	p.qmu.Unlock()
	p.wake()
	if f.o == nil {
		o.finish(nil) // eager: the frame is copied
	}
}

// frameFor makes o's queue entry, an eager copy when o is small, fast and
// the peer's eager bytes allow. Called with qmu held.
func (p *tcpPeer) frameFor(o *op, fast bool) outFrame {
	f := outFrame{o: o}
	f.hn = encodeHeader(f.hdr[:], &o.hdr)
	n := f.hn + o.hdr.nbytes
	if !fast || o.hdr.nbytes > eagerMax || p.eagerQ+n > eagerLimit {
		return f
	}
	var b []byte
	if k := len(p.free); k > 0 && cap(p.free[k-1]) >= n {
		b, p.free = p.free[k-1][:n], p.free[:k-1]
	} else {
		b = make([]byte, n, max(n, 4<<10))
	}
	copy(b, f.hdr[:f.hn])
	copy(b[f.hn:], o.buf.bytes())
	p.eagerQ += n
	f.o, f.data = nil, b
	return f
}

// tryWrite makes one non-blocking attempt to write o's frame and returns how
// much of it the socket took.
func (p *tcpPeer) tryWrite(o *op) (n, total int, err error) {
	h := encodeHeader(p.frame[:], &o.hdr)
	payload := o.buf.bytes()
	total = h + len(payload)
	if len(payload) <= copyMax {
		copy(p.frame[h:], payload)
		p.iov[0], p.iov[1] = p.frame[:total], nil
	} else {
		p.iov[0], p.iov[1] = p.frame[:h], payload
	}
	if err := p.raw.Write(p.wOnce); err != nil {
		return 0, total, err
	}
	p.iov[1] = nil
	return p.wn, total, p.wErr
}

// writeOnce is tryWrite's system call: it never waits for the socket.
func (p *tcpPeer) writeOnce(fd uintptr) bool {
	for {
		var n int
		var err error
		if p.iov[1] == nil {
			n, err = unix.Write(int(fd), p.iov[0])
		} else {
			n, err = unix.Writev(int(fd), p.iov[:])
		}
		if err == unix.EINTR {
			continue
		}
		if err == unix.EAGAIN {
			n, err = 0, nil
		}
		p.wn, p.wErr = max(n, 0), err
		return true
	}
}

func (p *tcpPeer) wrote(o *op, err error) {
	if err != nil {
		p.breakLink(fmt.Errorf("connection to rank %d lost while sending: %w", p.rank, err))
		o.finish(p.linkErr())
		return
	}
	o.finish(nil)
}

func (p *tcpPeer) linkErr() error {
	p.qmu.Lock()
	defer p.qmu.Unlock()
	return p.werr
}

func (p *tcpPeer) writeLoop() {
	defer p.t.wg.Done()
	for {
		p.qmu.Lock()
		if p.werr != nil {
			p.qmu.Unlock()
			return
		}
		if p.busy || len(p.queue) == 0 {
			p.qmu.Unlock()
			<-p.kick
			continue
		}
		batch := p.queue
		p.queue = p.spare[:0]
		p.busy = true
		p.qmu.Unlock()
		err := p.writeBatch(batch)
		p.qmu.Lock()
		p.busy = false
		for _, f := range batch {
			if f.data != nil {
				p.eagerQ -= len(f.data)
				if len(p.free) < 64 {
					p.free = append(p.free, f.data)
				}
			}
		}
		p.qmu.Unlock()
		for _, f := range batch {
			if f.o != nil {
				p.wrote(f.o, err)
			}
		}
		clear(batch)
		p.spare = batch[:0]
	}
}

// writeBatch writes the frames of batch with as few writev calls as the
// kernel allows, blocking until all are on the wire.
func (p *tcpPeer) writeBatch(batch []outFrame) error {
	v := p.wvec[:0]
	for i := range batch {
		f := &batch[i]
		if f.data != nil {
			v = append(v, f.data[f.off:])
			continue
		}
		payload := f.o.buf.bytes()
		if f.off < f.hn {
			v = append(v, f.hdr[f.off:f.hn])
			if len(payload) > 0 {
				v = append(v, payload)
			}
		} else if rest := payload[f.off-f.hn:]; len(rest) > 0 {
			v = append(v, rest)
		}
	}
	p.wvec = v[:0]
	bufs := net.Buffers(v)
	_, err := bufs.WriteTo(p.conn)
	clear(v)
	return err
}

func (p *tcpPeer) cancelSend(o *op, err error) {
	p.qmu.Lock()
	if i := slices.IndexFunc(p.queue, func(f outFrame) bool { return f.o == o }); i >= 0 && p.queue[i].off == 0 {
		p.queue = slices.Delete(p.queue, i, i+1)
		p.qmu.Unlock()
		o.finish(err)
		return
	}
	p.qmu.Unlock()
	if !o.finished.Load() {
		// On the wire, or partly: a half-sent frame cannot be taken back.
		p.breakLink(fmt.Errorf("link to rank %d broken: %s was cancelled mid-message: %w", p.rank, o.describe(), err))
	}
}
