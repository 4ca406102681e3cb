package collective

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

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

// driveMax is the largest message a Wait reads itself (drive); larger ones
// are read by the link's reader goroutine straight into place.
const driveMax = 16 << 10

// spinFor is how long the reader polls an idle socket before it parks, when
// the previous frame came in less than spinRecent ago. A parked reader is
// woken through the kernel and the Go scheduler, which costs a few
// microseconds a message; while messages come back to back (a ping-pong, a
// ring step) polling finds the next one sooner, and the bound keeps the cost
// at most spinFor of CPU per message.
//
// spinFor must outlast the time a rank that parked takes to wake up and
// answer, or both ends of a ping-pong can fall into parking on every
// message, each giving up just before the other's answer comes: a CPU left
// idle by a parked rank takes tens of microseconds to wake on a virtual
// machine. Of 56 back-to-back runs of `bench p2p --min 8 --max 8
// --no-ceiling` with each bound on the 2-core development machine, 25
// reported more than 9 µs latency (up to 117; round trips of about 240 µs for
// tens of milliseconds at a time) with 50 µs, and 6 (up to 47) with 250 µs.
//
// Inside a payload of spinPayloadMin or more, where the sender keeps the
// socket busy, a read that finds the socket empty polls for spinPayloadFor.
const (
	spinFor        = 250 * time.Microsecond
	spinRecent     = 1 * time.Millisecond
	spinPayloadMin = 1 << 20
	spinPayloadFor = 50 * time.Microsecond
)

// tcpPeer is the connection to one other rank.
//
// Incoming frames are read by one reader goroutine that matches them to
// posted receives and reads payloads straight into their buffers; while it
// polls between frames, the Wait of a small receive may take over and read
// small frames itself (drive), which spares the waiter two goroutine
// switches per message.
//
// Outgoing frames leave in the order they were sent through one queue. A
// send that finds the link idle writes its frame itself with one
// non-blocking write, saving two goroutine switches; what the socket does
// not take goes to the front of the queue. A small send that finds the link
// busy is copied and completes at once (eager); the writer goroutine puts
// everything queued on the wire with one writev, so a stream of small
// messages costs few system calls on either side.
type tcpPeer struct {
	t    *tcpTransport
	rank int
	conn *net.TCPConn
	raw  syscall.RawConn
	br   *bufio.Reader
	box  mailbox

	qmu    sync.Mutex
	queue  []outFrame
	busy   bool // a send or the writer is writing
	eagerQ int  // bytes of eager frames queued or being written
	werr   error
	kick   chan struct{}
	free   [][]byte // eager frame buffers to reuse

	// The inline write's state (used only while busy is set by a send).
	frame  [headerMax + copyMax]byte
	iov    [2][]byte
	wn     int
	wErr   error
	wOnce  func(fd uintptr) bool
	spare  []outFrame // writer only: the previous batch, the next queue
	wvec   [][]byte   // writer only: the batch's iovecs
	sr     spinReader
	breakO sync.Once

	// rd is held by whoever reads frames from the socket: the reader
	// goroutine, or a Wait that reads its own message (drive). want counts
	// the Waits that ask for it; the reader hands rd over only between
	// frames, in awaitFrame.
	rd     sync.Mutex
	want   atomic.Int32
	driven atomic.Uint64 // frames read by waiting receivers, for tests

	heldBack atomic.Bool // the reader waits for room in the staging pool
}

// outFrame is one frame waiting for the wire: a send in flight (o, with its
// encoded header) or an eager copy of a whole frame (data; its send is
// already complete).
type outFrame struct {
	o    *op
	data []byte
	hdr  [headerMax]byte
	hn   int
	off  int // bytes already written
}

func newTCPPeer(t *tcpTransport, rank int, c *net.TCPConn) *tcpPeer {
	p := &tcpPeer{t: t, rank: rank, conn: c, kick: make(chan struct{}, 1)}
	p.raw, _ = c.SyscallConn() // cannot fail for a *net.TCPConn that is open
	p.wOnce = p.writeOnce
	p.sr = spinReader{conn: c, raw: p.raw}
	p.sr.readFn = p.sr.readOnce
	p.br = bufio.NewReaderSize(&p.sr, 64<<10)
	p.box.pool = t.pool
	return p
}

func (p *tcpPeer) wake() {
	select {
	case p.kick <- struct{}{}:
	default:
	}
}

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

// breakLink records why the link is gone (the first reason wins), closes the
// connection so both goroutines stop, and fails every queued send.
func (p *tcpPeer) breakLink(err error) {
	p.breakO.Do(func() {
		p.qmu.Lock()
		p.werr = err
		q := p.queue
		p.queue = nil
		p.qmu.Unlock()
		p.conn.Close()
		p.wake()
		p.t.pool.poke()
		for _, f := range q {
			if f.o != nil {
				f.o.finish(err)
			}
		}
	})
}

func (p *tcpPeer) readLoop() {
	defer p.t.wg.Done()
	var hb [headerMax]byte
	for {
		p.rd.Lock()
		p.awaitFrame()
		more, delivered := p.readFrame(hb[:])
		buffered := p.br.Buffered()
		p.rd.Unlock()
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
// back, and hands the link to Waits that want to read their own message
// (drive). It returns, holding rd, when bytes are buffered (or a read error
// waits to be found), or when polling should give way to parking in the
// network poller. A parked reader is woken through the kernel and the Go
// scheduler, which costs a few microseconds a message; the bound keeps
// polling at most spinFor of CPU per message.
func (p *tcpPeer) awaitFrame() {
	if !p.sr.poll || p.sr.last.IsZero() {
		return
	}
	var until time.Time
	for polls := 1; ; polls++ {
		if p.want.Load() > 0 {
			p.rd.Unlock()
			runtime.Gosched() // a driving Wait takes rd here, and gives it back when done
			p.rd.Lock()
			until = time.Time{}
		}
		if p.br.Buffered() > 0 {
			return
		}
		if until.IsZero() {
			now := time.Now()
			if now.Sub(p.sr.last) >= spinRecent {
				return
			}
			until = now.Add(spinFor)
		}
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

// drive lets the Wait of a small receive o read from the socket itself while
// the reader goroutine polls between frames: the waiting goroutine finds its
// message one poll sooner and runs on without two goroutine switches. It
// reads only small frames that are whole in the frame buffer and can be
// delivered without waiting (anything else is left to the reader goroutine,
// which reads larger payloads straight into place). It returns when o has
// finished or after about spinFor without a frame, and reports whether it
// polled at all (not for large receives, nor when the link does not poll).
func (p *tcpPeer) drive(o *op) bool {
	if !p.sr.poll || o.buf.Len()*o.buf.DType.Size() > driveMax {
		return false
	}
	p.want.Add(1)
	defer p.want.Add(-1)
	held := false
	until := time.Now().Add(spinFor)
	for polls := 1; !o.finished.Load(); polls++ {
		if !held {
			// The reader goroutine hands rd over between frames; until
			// then (inside a frame, or parked) o may still arrive through it.
			held = p.rd.TryLock()
		}
		if held {
			progress, ok := p.readWhole()
			if !ok {
				break
			}
			if progress {
				until = time.Now().Add(spinFor)
				continue
			}
		}
		if polls%8 == 0 {
			if time.Now().After(until) {
				break
			}
			runtime.Gosched() // the rank's other goroutines
		} else if !held {
			runtime.Gosched() // the reader goroutine, to hand rd over
		}
	}
	if held {
		p.rd.Unlock()
	}
	return true
}

// readWhole reads and delivers the next frame if it is whole in the frame
// buffer (filling it without waiting) and can be delivered at once. ok is
// false when the frame must be left to the reader goroutine: a large or
// unusual frame, a full staging pool, or a failing socket.
func (p *tcpPeer) readWhole() (progress, ok bool) {
	p.sr.nowait = true
	defer func() { p.sr.nowait = false }()
	b, err := p.br.Peek(headerFixed)
	if err != nil {
		return false, errors.Is(err, errWouldBlock)
	}
	nd := int(b[6])
	if nd > MaxDims {
		return false, false
	}
	hl := headerFixed + 8*nd
	if b, err = p.br.Peek(hl); err != nil {
		return false, errors.Is(err, errWouldBlock)
	}
	h, _, err := decodeHeader(b)
	if err != nil || h.tag.Kind == kindBye || h.nbytes > driveMax {
		return false, false
	}
	if _, err := p.br.Peek(hl + h.nbytes); err != nil {
		return false, errors.Is(err, errWouldBlock)
	}
	r, msg, ok := p.box.arrive(&h)
	if !ok {
		return false, false
	}
	p.br.Discard(hl) // cannot fail: the whole frame is buffered, so nothing below reads the socket
	if err := p.deliver(&h, r, msg); err != nil {
		p.readFailed(err) // not expected: nothing here reads the socket
		return false, false
	}
	p.driven.Add(1)
	return true, true
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

// spinReader is the link's view of the socket, used by whoever holds rd.
// While spin is set and the last read was recent, a read that finds nothing
// polls the socket for up to spinPayloadFor (yielding to the process's other
// goroutines between polls) before it parks in the runtime's network poller.
// With nowait set, a read that finds nothing returns errWouldBlock instead.
type spinReader struct {
	conn   *net.TCPConn
	raw    syscall.RawConn
	poll   bool // polling is on for this link (tcpTransport.tune)
	spin   bool // the caller wants polling for this read
	nowait bool // the caller must not wait at all (drive)
	last   time.Time
	buf    []byte
	n      int
	err    error
	readFn func(fd uintptr) bool
}

// errWouldBlock is a nowait read's "nothing yet".
var errWouldBlock = errors.New("no data yet")

func (r *spinReader) Read(b []byte) (int, error) {
	if r.nowait {
		r.buf = b
		err := r.raw.Read(r.readFn)
		n, rerr := r.n, r.err
		r.n, r.err, r.buf = 0, nil, nil
		switch {
		case err != nil:
			return 0, err
		case rerr != nil:
			return 0, rerr
		case n == 0:
			return 0, errWouldBlock
		}
		r.last = time.Now()
		return n, nil
	}
	if r.poll && r.spin && !r.last.IsZero() {
		now := time.Now()
		if now.Sub(r.last) < spinRecent {
			if n, ok, err := r.pollRead(b, now.Add(spinPayloadFor)); ok {
				if n > 0 {
					r.last = now // when polling began: near enough, and one clock read less
				}
				return n, err
			}
		}
	}
	n, err := r.conn.Read(b)
	if n > 0 && r.poll {
		r.last = time.Now()
	}
	return n, err
}

// pollRead polls until data comes (ok) or the time is up (not ok). The clock
// is read every 8 polls: on a virtual machine a clock read costs about as much
// as a poll.
func (r *spinReader) pollRead(b []byte, until time.Time) (n int, ok bool, err error) {
	r.buf = b
	for polls := 1; ; polls++ {
		if err := r.raw.Read(r.readFn); err != nil {
			r.buf = nil
			return 0, true, err
		}
		if r.n > 0 || r.err != nil {
			n, err = r.n, r.err
			r.n, r.err, r.buf = 0, nil, nil
			return n, true, err
		}
		if polls%8 == 0 && time.Now().After(until) {
			r.buf = nil
			return 0, false, nil
		}
		runtime.Gosched()
	}
}

// readOnce is the polling read: one non-blocking read(2), never waiting.
//
// A read that finds the socket empty takes the socket's lock for a moment;
// segments that arrive meanwhile wait on its backlog, and the reader then
// processes them itself, off the sender's CPU. Looking first with poll(2),
// which leaves the lock alone, made nothing faster in alternating runs of
// `bench p2p` (round trips, and streams from 64 B to 64 MiB), and streams of
// 64 B-8 KiB were slower in most rounds.
func (r *spinReader) readOnce(fd uintptr) bool {
	for {
		n, err := unix.Read(int(fd), r.buf)
		switch {
		case err == unix.EINTR:
			continue
		case err == unix.EAGAIN:
			r.n, r.err = 0, nil
		case err != nil:
			r.n, r.err = 0, err
		case n == 0:
			r.n, r.err = 0, io.EOF
		default:
			r.n, r.err = n, nil
		}
		return true
	}
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
