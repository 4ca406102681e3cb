package collective

import (
	"bufio"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/pplaunch/pplaunch/ranks/store"
)

// TCPOptions configure the TCP backend.
type TCPOptions struct {
	Options
	// Token is the job's secret; peers prove they hold it when they connect
	// (HMAC-SHA256 over fresh nonces, so it never crosses the wire).
	Token string
	// Addr is the address to listen on (default "127.0.0.1:0"; use
	// "0.0.0.0:0" or a host's address for multi-node jobs).
	Addr string
	// Advertise is the address published for peers to dial, when it differs
	// from the listening address (default: the listener's address, with the
	// host name in place of an unspecified host).
	Advertise string
	// StorePrefix namespaces the keys this communicator writes in the store
	// (default "collective"); a restarted group should use a fresh prefix.
	StorePrefix string
	// SocketBuffer, when positive, sets SO_SNDBUF and SO_RCVBUF in bytes
	// (capped by the kernel at net.core.[rw]mem_max). By default the kernel
	// autotunes them, which on Linux grows them further (net.ipv4.tcp_rmem,
	// tcp_wmem: up to 32 MiB and 4 MiB here) than an explicit setting may.
	SocketBuffer int
}

// NewTCP joins the TCP world of size ranks as rank: it listens, publishes its
// address in st, connects to every other rank (the higher rank dials), and
// authenticates each connection with the job token. It returns once all
// connections are up, or fails naming the ranks it could not reach.
func NewTCP(ctx context.Context, st store.Store, rank, size int, opts TCPOptions) (Comm, error) {
	if size < 1 || rank < 0 || rank >= size {
		return nil, fmt.Errorf("collective: rank %d of world size %d is out of range", rank, size)
	}
	if opts.Token == "" {
		return nil, fmt.Errorf("collective: rank %d: the TCP backend needs the job token (TCPOptions.Token)", rank)
	}
	if opts.Addr == "" {
		opts.Addr = "127.0.0.1:0"
	}
	if opts.StorePrefix == "" {
		opts.StorePrefix = "collective"
	}
	opts.Options = opts.Options.withDefaults()
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, opts.Timeout)
		defer cancel()
	}
	t := &tcpTransport{rank: rank, size: size, opts: opts, peers: make([]*tcpPeer, size), addrs: make([]string, size)}
	t.self.pool = &t.pool
	if err := t.connect(ctx, st); err != nil {
		t.shutdown(err)
		return nil, fmt.Errorf("collective: rank %d: %w", rank, err)
	}
	for _, p := range t.peers {
		if p != nil {
			t.wg.Add(2)
			go p.readLoop()
			go p.writeLoop()
		}
	}
	return newWorld(t, opts.Options), nil
}

// PeerAddr returns the address rank peer of a TCP communicator listens on,
// and false for other backends.
func PeerAddr(c Comm, peer int) (string, bool) {
	cc, ok := c.(*comm)
	if !ok {
		return "", false
	}
	t, ok := cc.t.(*tcpTransport)
	if !ok || peer < 0 || peer >= len(cc.ranks) {
		return "", false
	}
	return t.addrs[cc.ranks[peer]], true
}

type tcpTransport struct {
	rank, size int
	opts       TCPOptions
	ln         net.Listener
	peers      []*tcpPeer
	addrs      []string
	self       mailbox // messages a rank sends itself
	pool       stagingPool
	gone       atomic.Pointer[error]
	wg         sync.WaitGroup
	stopOnce   sync.Once
}

func (t *tcpTransport) worldRank() int { return t.rank }
func (t *tcpTransport) worldSize() int { return t.size }

func (t *tcpTransport) key(rank int) string {
	return t.opts.StorePrefix + "/addr/" + strconv.Itoa(rank)
}

// connect listens, publishes, dials lower ranks and accepts higher ones.
func (t *tcpTransport) connect(ctx context.Context, st store.Store) error {
	ln, err := net.Listen("tcp", t.opts.Addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", t.opts.Addr, err)
	}
	t.ln = ln
	adv := t.opts.Advertise
	if adv == "" {
		adv = advertised(ln.Addr().(*net.TCPAddr))
	}
	t.addrs[t.rank] = adv
	if err := st.Set(ctx, t.key(t.rank), []byte(adv)); err != nil {
		return fmt.Errorf("publish address: %w", err)
	}
	accepted := make(chan error, 1)
	go func() { accepted <- t.acceptPeers(ctx) }()
	var dialErr error
	for peer := 0; peer < t.rank && dialErr == nil; peer++ {
		dialErr = t.dial(ctx, st, peer)
	}
	if dialErr != nil {
		ln.Close() // stops acceptPeers
		<-accepted
		return dialErr
	}
	if err := <-accepted; err != nil {
		return err
	}
	ln.Close() // every peer is connected; nobody else may join
	// Higher ranks published their addresses before dialing us.
	for peer := t.rank + 1; peer < t.size; peer++ {
		a, err := st.Get(ctx, t.key(peer))
		if err != nil {
			return fmt.Errorf("look up the address of rank %d: %w", peer, err)
		}
		t.addrs[peer] = string(a)
	}
	return nil
}

func advertised(a *net.TCPAddr) string {
	if a.IP.IsUnspecified() {
		if h, err := os.Hostname(); err == nil {
			return net.JoinHostPort(h, strconv.Itoa(a.Port))
		}
	}
	return a.String()
}

func (t *tcpTransport) dial(ctx context.Context, st store.Store, peer int) error {
	a, err := st.Get(ctx, t.key(peer))
	if err != nil {
		return fmt.Errorf("look up the address of rank %d: %w", peer, err)
	}
	addr := string(a)
	t.addrs[peer] = addr
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return fmt.Errorf("connect to rank %d at %s: %w", peer, addr, err)
	}
	conn := c.(*net.TCPConn)
	if err := t.handshakeDial(ctx, conn, peer); err != nil {
		conn.Close()
		return fmt.Errorf("connect to rank %d at %s: %w", peer, addr, err)
	}
	t.addPeer(peer, conn)
	return nil
}

// acceptPeers accepts connections until every higher rank has connected and
// proved the token. Connections that fail the handshake are refused and
// remembered for the error message; they do not stop the wait.
func (t *tcpTransport) acceptPeers(ctx context.Context) error {
	want := t.size - 1 - t.rank
	if want == 0 {
		return nil
	}
	type result struct {
		rank int
		conn *net.TCPConn
		err  error
	}
	results := make(chan result)
	stop := context.AfterFunc(ctx, func() { t.ln.Close() })
	defer stop()
	var hs sync.WaitGroup
	go func() {
		var backoff time.Duration
		for {
			c, err := t.ln.Accept()
			if err != nil && !errors.Is(err, net.ErrClosed) {
				// Out of file descriptors, say: peers retry nothing, so keep
				// accepting (until ctx closes the listener).
				backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
				time.Sleep(backoff)
				continue
			}
			if err != nil {
				hs.Wait()
				close(results)
				return
			}
			backoff = 0
			hs.Add(1)
			go func() {
				defer hs.Done()
				conn := c.(*net.TCPConn)
				r, err := t.handshakeAccept(ctx, conn)
				if err != nil {
					conn.Close()
					err = fmt.Errorf("refused %s: %w", c.RemoteAddr(), err)
				}
				results <- result{r, conn, err}
			}()
		}
	}()
	var refused []error
	for res := range results {
		switch {
		case res.err != nil:
			refused = append(refused, res.err)
		case t.peers[res.rank] != nil:
			res.conn.Close()
			refused = append(refused, fmt.Errorf("rank %d connected twice", res.rank))
		default:
			t.addPeer(res.rank, res.conn)
			if want--; want == 0 {
				t.ln.Close()
			}
		}
	}
	if want == 0 {
		return nil
	}
	var missing []int
	for r := t.rank + 1; r < t.size; r++ {
		if t.peers[r] == nil {
			missing = append(missing, r)
		}
	}
	err := fmt.Errorf("waiting for ranks %v to connect: %w", missing, context.Cause(ctx))
	if ctx.Err() == nil {
		err = fmt.Errorf("waiting for ranks %v to connect: listener closed", missing)
	}
	return errors.Join(append([]error{err}, refused...)...)
}

const (
	handshakeMagic = "PPH1"
	nonceLen       = 16
)

func mac(token string, label string, nonce []byte, a, b, size int) []byte {
	m := hmac.New(sha256.New, []byte(token))
	m.Write([]byte(label))
	m.Write(nonce)
	var x [12]byte
	binary.LittleEndian.PutUint32(x[0:], uint32(a))
	binary.LittleEndian.PutUint32(x[4:], uint32(b))
	binary.LittleEndian.PutUint32(x[8:], uint32(size))
	m.Write(x[:])
	return m.Sum(nil)
}

// handshakeAccept runs the acceptor's side: send a nonce, check the dialer's
// proof of the token and its rank, answer with our own proof.
func (t *tcpTransport) handshakeAccept(ctx context.Context, c *net.TCPConn) (int, error) {
	defer context.AfterFunc(ctx, func() { c.SetDeadline(time.Unix(1, 0)) })()
	var nonce [nonceLen]byte
	rand.Read(nonce[:])
	if _, err := c.Write(append([]byte(handshakeMagic), nonce[:]...)); err != nil {
		return -1, err
	}
	var hello [4 + 12 + nonceLen + sha256.Size]byte
	if _, err := io.ReadFull(c, hello[:]); err != nil {
		return -1, fmt.Errorf("read hello: %w", err)
	}
	if string(hello[:4]) != handshakeMagic {
		return -1, refuse(c, fmt.Sprintf("not a pplaunch collective hello (magic %q)", hello[:4]))
	}
	from := int(binary.LittleEndian.Uint32(hello[4:]))
	to := int(binary.LittleEndian.Uint32(hello[8:]))
	size := int(binary.LittleEndian.Uint32(hello[12:]))
	theirs := hello[16 : 16+nonceLen]
	proof := hello[16+nonceLen:]
	if !hmac.Equal(proof, mac(t.opts.Token, "dial", nonce[:], from, to, size)) {
		return -1, refuse(c, "wrong job token")
	}
	if to != t.rank || size != t.size || from <= t.rank || from >= t.size {
		return -1, refuse(c, fmt.Sprintf("rank %d of world %d dialed rank %d, but this is rank %d of world %d", from, size, to, t.rank, t.size))
	}
	reply := append([]byte{0}, mac(t.opts.Token, "accept", theirs, t.rank, from, t.size)...)
	if _, err := c.Write(reply); err != nil {
		return -1, err
	}
	return from, c.SetDeadline(time.Time{})
}

// refuse tells the dialer why (best effort) and returns the reason.
func refuse(c *net.TCPConn, why string) error {
	msg := []byte(why)
	b := append([]byte{1, byte(len(msg) >> 8), byte(len(msg))}, msg...)
	c.Write(b)
	return errors.New(why)
}

func (t *tcpTransport) handshakeDial(ctx context.Context, c *net.TCPConn, peer int) error {
	defer context.AfterFunc(ctx, func() { c.SetDeadline(time.Unix(1, 0)) })()
	var greet [4 + nonceLen]byte
	if _, err := io.ReadFull(c, greet[:]); err != nil {
		return fmt.Errorf("read greeting: %w", err)
	}
	if string(greet[:4]) != handshakeMagic {
		return fmt.Errorf("not a pplaunch collective peer (magic %q)", greet[:4])
	}
	var mine [nonceLen]byte
	rand.Read(mine[:])
	hello := []byte(handshakeMagic)
	hello = binary.LittleEndian.AppendUint32(hello, uint32(t.rank))
	hello = binary.LittleEndian.AppendUint32(hello, uint32(peer))
	hello = binary.LittleEndian.AppendUint32(hello, uint32(t.size))
	hello = append(hello, mine[:]...)
	hello = append(hello, mac(t.opts.Token, "dial", greet[4:], t.rank, peer, t.size)...)
	if _, err := c.Write(hello); err != nil {
		return err
	}
	var status [1]byte
	if _, err := io.ReadFull(c, status[:]); err != nil {
		return fmt.Errorf("read handshake answer: %w", err)
	}
	if status[0] != 0 {
		var l [2]byte
		io.ReadFull(c, l[:])
		why := make([]byte, int(l[0])<<8|int(l[1]))
		io.ReadFull(c, why)
		return fmt.Errorf("rank %d refused the connection: %s", peer, why)
	}
	proof := make([]byte, sha256.Size)
	if _, err := io.ReadFull(c, proof); err != nil {
		return fmt.Errorf("read handshake answer: %w", err)
	}
	if !hmac.Equal(proof, mac(t.opts.Token, "accept", mine[:], peer, t.rank, t.size)) {
		return fmt.Errorf("rank %d does not hold the job token", peer)
	}
	return c.SetDeadline(time.Time{})
}

func (t *tcpTransport) addPeer(rank int, c *net.TCPConn) {
	c.SetNoDelay(true)
	if b := t.opts.SocketBuffer; b > 0 {
		c.SetReadBuffer(b)
		c.SetWriteBuffer(b)
	}
	p := &tcpPeer{t: t, rank: rank, conn: c, br: bufio.NewReaderSize(c, 64<<10), kick: make(chan struct{}, 1)}
	p.box.pool = &t.pool
	t.peers[rank] = p
}

func (t *tcpTransport) goneErr() error {
	if e := t.gone.Load(); e != nil {
		return *e
	}
	return nil
}

func (t *tcpTransport) post(o *op) {
	if err := t.goneErr(); err != nil {
		o.finish(err)
		return
	}
	if o.peer == t.rank {
		if o.send {
			deliverLocal(&t.self, o, t.rank)
		} else {
			t.self.post(o, t.rank)
		}
		return
	}
	p := t.peers[o.peer]
	if o.send {
		p.send(o)
	} else {
		p.box.post(o, t.rank)
	}
}

func (t *tcpTransport) cancel(o *op, err error) {
	o.cancelErr.Store(&err)
	if o.peer == t.rank {
		if !o.send && t.self.withdraw(o) {
			o.finish(err)
		}
		return
	}
	p := t.peers[o.peer]
	if o.send {
		p.cancelSend(o, err)
		return
	}
	if p.box.withdraw(o) {
		o.finish(err)
		return
	}
	if !o.finished.Load() {
		p.breakLink(fmt.Errorf("link to rank %d broken: %s was cancelled mid-message: %w", p.rank, o.describe(), err))
	}
}

// shutdown stops everything with err and waits for the I/O goroutines.
func (t *tcpTransport) shutdown(err error) {
	t.stopOnce.Do(func() {
		t.gone.Store(&err)
		if t.ln != nil {
			t.ln.Close()
		}
		for _, p := range t.peers {
			if p != nil {
				p.breakLink(err)
			}
		}
		t.self.fail(err)
		t.wg.Wait()
	})
}

func (t *tcpTransport) abort(err error) { t.shutdown(err) }

// close says goodbye to every peer (so their waiters fail at once, naming this
// rank), waits briefly for those frames to leave, then shuts down.
func (t *tcpTransport) close() error {
	var hs []*Handle
	for _, p := range t.peers {
		if p != nil {
			h := newHandle(t, 0, 1)
			o := &op{h: h, send: true, peer: p.rank, tag: Tag{Kind: kindBye}, buf: Bytes(nil)}
			o.hdr = headerFor(0, o.tag, o.buf)
			h.ops = append(h.ops, o)
			p.sendMaybeInline(o, false) // queued, so the wait below bounds it
			hs = append(hs, h)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, h := range hs {
		h.Wait(ctx)
	}
	t.shutdown(ErrClosed)
	return nil
}

// copyMax is the largest payload copied next to its header for one write;
// larger ones are written from the caller's buffer (writev).
const copyMax = 16 << 10

// callerWriteMax is the largest frame the sending goroutine writes itself when
// the link is idle, saving two goroutine switches per message; larger frames
// go to the writer goroutine so that Isend returns at once.
const callerWriteMax = 256 << 10

// tcpPeer is the connection to one other rank: a reader goroutine that
// matches incoming frames to posted receives, and a send queue drained by a
// writer goroutine (small frames are written by the caller when the queue is
// idle, saving a goroutine switch).
type tcpPeer struct {
	t    *tcpTransport
	rank int
	conn *net.TCPConn
	br   *bufio.Reader
	box  mailbox

	qmu   sync.Mutex
	queue []*op
	busy  bool // a frame is being written
	cur   *op  // the op being written, if from the queue
	werr  error
	kick  chan struct{}
	frame [headerMax + copyMax]byte
	vec   [2][]byte

	breakOnce sync.Once
}

func (p *tcpPeer) wake() {
	select {
	case p.kick <- struct{}{}:
	default:
	}
}

func (p *tcpPeer) send(o *op) { p.sendMaybeInline(o, true) }

// sendMaybeInline queues o for the writer goroutine, or, when inline is
// allowed, the queue is idle and the frame small, writes it at once. An
// inline write is bounded by the communicator's timeout: it blocks only if
// the peer stopped draining its socket.
func (p *tcpPeer) sendMaybeInline(o *op, inline bool) {
	p.qmu.Lock()
	if p.werr != nil {
		err := p.werr
		p.qmu.Unlock()
		o.finish(err)
		return
	}
	if inline && !p.busy && len(p.queue) == 0 && o.hdr.nbytes <= callerWriteMax {
		p.busy = true
		p.qmu.Unlock()
		p.conn.SetWriteDeadline(time.Now().Add(p.t.opts.Timeout))
		err := p.write(o)
		p.conn.SetWriteDeadline(time.Time{})
		p.qmu.Lock()
		p.busy = false
		more := len(p.queue) > 0
		p.qmu.Unlock()
		if more {
			p.wake()
		}
		p.wrote(o, err)
		return
	}
	p.queue = append(p.queue, o)
	p.qmu.Unlock()
	p.wake()
}

func (p *tcpPeer) wrote(o *op, err error) {
	if errors.Is(err, os.ErrDeadlineExceeded) {
		err = fmt.Errorf("timeout after %v: rank %d stopped reading (%w)", p.t.opts.Timeout, p.rank, err)
	}
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
		o := p.queue[0]
		p.queue = slices.Delete(p.queue, 0, 1)
		p.busy, p.cur = true, o
		p.qmu.Unlock()
		err := p.write(o)
		p.qmu.Lock()
		p.busy, p.cur = false, nil
		p.qmu.Unlock()
		p.wrote(o, err)
	}
}

// write puts o's frame on the wire: small payloads in one write with the
// header, large ones straight from the caller's buffer.
func (p *tcpPeer) write(o *op) error {
	n := encodeHeader(p.frame[:], &o.hdr)
	payload := o.buf.bytes()
	if len(payload) <= copyMax {
		n += copy(p.frame[n:], payload)
		_, err := p.conn.Write(p.frame[:n])
		return err
	}
	p.vec[0], p.vec[1] = p.frame[:n], payload
	bufs := net.Buffers(p.vec[:])
	_, err := bufs.WriteTo(p.conn) // one writev: header and payload leave together
	p.vec[0], p.vec[1] = nil, nil
	return err
}

func (p *tcpPeer) cancelSend(o *op, err error) {
	p.qmu.Lock()
	if i := slices.Index(p.queue, o); i >= 0 {
		p.queue = slices.Delete(p.queue, i, i+1)
		p.qmu.Unlock()
		o.finish(err)
		return
	}
	writing := p.cur == o
	p.qmu.Unlock()
	if writing {
		p.breakLink(fmt.Errorf("link to rank %d broken: %s was cancelled mid-message: %w", p.rank, o.describe(), err))
	}
}

// breakLink records why the link is gone (the first reason wins), closes the
// connection so both goroutines stop, and fails every queued send.
func (p *tcpPeer) breakLink(err error) {
	p.breakOnce.Do(func() {
		p.qmu.Lock()
		p.werr = err
		q := p.queue
		p.queue = nil
		p.qmu.Unlock()
		p.conn.Close()
		p.wake()
		for _, o := range q {
			o.finish(err)
		}
	})
}

func (p *tcpPeer) readLoop() {
	defer p.t.wg.Done()
	var hb [headerMax]byte
	for {
		h, err := p.readHeader(hb[:])
		if err != nil {
			p.readFailed(err)
			return
		}
		if h.tag.Kind == kindBye {
			err := fmt.Errorf("rank %d closed its communicator", p.rank)
			p.breakLink(err)
			p.box.fail(err)
			return
		}
		r, msg := p.box.arrive(&h)
		switch {
		case msg != nil:
			err = p.readStaged(msg)
		case !h.matches(r.buf):
			r.finish(mismatch(r, p.t.rank, &h))
			_, err = p.br.Discard(h.nbytes)
		default:
			if _, err = io.ReadFull(p.br, r.buf.bytes()); err != nil {
				r.finish(p.readError(err))
			} else {
				r.finish(nil)
			}
		}
		if err != nil {
			p.readFailed(err)
			return
		}
		if p.br.Buffered() == 0 {
			// Let the receiver just woken run before this goroutine goes
			// back to the socket: its reply leaves a few µs sooner.
			runtime.Gosched()
		}
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
			if _, err := io.ReadFull(p.br, dst[msg.received:]); err != nil {
				bound.finish(p.readError(err))
				return err
			}
			bound.finish(nil)
			return nil
		}
		k := min(n-msg.received, stagePiece)
		if _, err := io.ReadFull(p.br, msg.data[msg.received:msg.received+k]); err != nil {
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
