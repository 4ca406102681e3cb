package collective

import (
	"errors"
	"io"
	"net"
	"runtime"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

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
	nowait bool // the caller must not wait at all (awaitFrame)
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
