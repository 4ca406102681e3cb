package collective

import (
	"bufio"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
)

// tcpPeer is the connection to one other rank.
//
// Incoming frames are read by one reader goroutine that matches them to
// posted receives and reads payloads straight into their buffers
// (tcprecv.go); while messages come back to back it polls the socket rather
// than park (spinreader.go).
//
// Outgoing frames leave in the order they were sent through one queue. A
// send that finds the link idle writes its frame itself with one
// non-blocking write, saving two goroutine switches; what the socket does
// not take goes to the front of the queue. A small send that finds the link
// busy is copied and completes at once (eager); the writer goroutine puts
// everything queued on the wire with one writev, so a stream of small
// messages costs few system calls on either side (tcpsend.go).
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
	sr     spinReader // the reader goroutine's view of the socket
	breakO sync.Once

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
