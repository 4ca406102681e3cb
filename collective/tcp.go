package collective

import (
	"context"
	"fmt"
	"net"
	"os"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pplaunch/pplaunch/store"
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
	// (capped by the kernel at net.core.[rw]mem_max; Linux doubles it); -1
	// leaves them to the kernel's autotuning. By default links between
	// ranks on one host get a 256 KiB send buffer while every rank on the
	// host has a CPU of its own, and everything else autotunes
	// (net.ipv4.tcp_rmem, tcp_wmem), which suits a long fat network.
	SocketBuffer int
	// Poll, when negative, keeps the links from polling their sockets
	// before they park (see the package documentation); when positive it
	// makes them poll whatever the CPU count. By default they poll while
	// every rank on this host has a CPU of its own.
	Poll int
	// StageLimit bounds the bytes held for messages that arrive before
	// their receive is posted (default 1 GiB). Past it the connection that
	// brings the next such message is not read until a receive is posted or
	// staged bytes are taken, so TCP holds its sender back; one message is
	// always staged when nothing else is, whatever its size.
	StageLimit int

	// Logf receives one line per connection the rank's listener refuses
	// (a stranger without the token, a hello that is not a rank's); nil:
	// the standard logger.
	Logf func(format string, args ...any)

	// handshakeTimeout, when positive, replaces store.HandshakeTimeout (tests).
	handshakeTimeout time.Duration
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
	if opts.StageLimit <= 0 {
		opts.StageLimit = 1 << 30
	}
	opts.Options = opts.Options.withDefaults()
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = RunTimeout(ctx, opts.Timeout)
		defer cancel()
	}
	t := &tcpTransport{rank: rank, size: size, opts: opts, peers: make([]*tcpPeer, size), addrs: make([]string, size)}
	t.pool = newStagingPool(opts.StageLimit)
	t.self.pool = t.pool
	if err := t.connect(ctx, st); err != nil {
		t.shutdown(err)
		return nil, fmt.Errorf("collective: rank %d: %w", rank, err)
	}
	t.tune()
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
	pool       *stagingPool
	gone       atomic.Pointer[error]
	wg         sync.WaitGroup
	ownCPU     bool // no more ranks on this host than CPUs
	stopOnce   sync.Once
}

func (t *tcpTransport) worldRank() int { return t.rank }
func (t *tcpTransport) worldSize() int { return t.size }
func (t *tcpTransport) polls() bool {
	return t.opts.Poll > 0 || t.ownCPU && t.opts.Poll == 0
}

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
	actx, stopAccepting := context.WithCancel(ctx)
	defer stopAccepting()
	accepted := make(chan error, 1)
	go func() { accepted <- t.acceptPeers(actx) }()
	var dialErr error
	for peer := 0; peer < t.rank && dialErr == nil; peer++ {
		dialErr = t.dial(ctx, st, peer)
	}
	if dialErr != nil {
		stopAccepting()
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
			return &PeerError{Peer: peer, Err: fmt.Errorf("look up the address of rank %d: %w", peer, err)}
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
		return &PeerError{Peer: peer, Err: fmt.Errorf("look up the address of rank %d: %w", peer, err)}
	}
	addr := string(a)
	t.addrs[peer] = addr
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return &PeerError{Peer: peer, Err: fmt.Errorf("connect to rank %d at %s: %w", peer, addr, err)}
	}
	conn := c.(*net.TCPConn)
	if err := t.handshakeDial(ctx, conn, peer); err != nil {
		conn.Close()
		return &PeerError{Peer: peer, Err: fmt.Errorf("connect to rank %d at %s: %w", peer, addr, err)}
	}
	t.addPeer(peer, conn)
	return nil
}

// localSendBuffer is the send buffer size (SO_SNDBUF) of links within one
// host; their receive buffers autotune. Less data in flight stays in the CPU
// caches between the kernel's copy in and its copy out. On the 2-core
// development machine (`pplaunch --nproc 2 bench p2p --min 64K --max 64M`,
// 4 alternating rounds, medians): 6.4, 5.0 and 3.7 GB/s at 1, 16 and 64 MiB
// against 3.7, 3.4 and 2.9 with `--autotune`; a 256 KiB receive buffer as
// well (`--socket-buffer 256K`) kept most of that but cost 64 KiB messages
// 19% (3.3 against 4.0 GB/s).
const localSendBuffer = 256 << 10

// tune sets how the links move bytes once all are up. Small socket buffers
// and polling pay off only while every rank on this host has a CPU of its
// own: with more ranks than CPUs a poller takes the CPU its peer needs to
// answer, and a sender whose receiver is descheduled is better off with room
// in its socket (`pplaunch --nproc 4 bench allreduce --min 16M --max 16M`
// took 31.1 ms with `--socket-buffer 256K` against 26.6 autotuned).
func (t *tcpTransport) tune() {
	local := 1
	for _, p := range t.peers {
		if p != nil && sameHost(p.conn) {
			local++
		}
	}
	t.ownCPU = local <= runtime.NumCPU()
	for _, p := range t.peers {
		if p == nil {
			continue
		}
		p.sr.poll = t.polls()
		if t.opts.SocketBuffer == 0 && t.ownCPU && sameHost(p.conn) {
			p.conn.SetWriteBuffer(localSendBuffer)
		}
	}
}

// sameHost reports whether both ends of c are on this host.
func sameHost(c *net.TCPConn) bool {
	l, lok := c.LocalAddr().(*net.TCPAddr)
	r, rok := c.RemoteAddr().(*net.TCPAddr)
	return lok && rok && (r.IP.IsLoopback() || l.IP.Equal(r.IP))
}

func (t *tcpTransport) addPeer(rank int, c *net.TCPConn) {
	c.SetNoDelay(true)
	if b := t.opts.SocketBuffer; b > 0 {
		c.SetReadBuffer(b)
		c.SetWriteBuffer(b)
	}
	t.peers[rank] = newTCPPeer(t, rank, c)
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
		p.send(o, true)
	} else {
		p.box.post(o, t.rank)
	}
}

func (t *tcpTransport) cancel(o *op, err error) {
	if o.peer != t.rank && !o.send && t.peers[o.peer].heldBack.Load() {
		err = fmt.Errorf("%w; reading from rank %d is held back: %d MiB of earlier messages from it and others wait for receives that were never posted (StageLimit %d MiB)",
			err, o.peer, t.pool.heldBytes()>>20, t.opts.StageLimit>>20)
	}
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
			h := newHandle(t, t, nil, 1)
			o := &op{h: h, send: true, peer: p.rank, tag: Tag{Kind: kindBye}, buf: Bytes(nil)}
			o.hdr = headerFor(0, o.tag, o.buf)
			h.ops = append(h.ops, o)
			p.send(o, false) // queued and not eager, so the wait below bounds it
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
