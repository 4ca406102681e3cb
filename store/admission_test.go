package store

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"io"
	"net"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// recordingListener keeps every byte its connections read: what clients sent.
type recordingListener struct {
	net.Listener
	mu  sync.Mutex
	got bytes.Buffer
}

type recordingConn struct {
	net.Conn
	l *recordingListener
}

func (l *recordingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &recordingConn{Conn: c, l: l}, nil
}

func (c *recordingConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	c.l.mu.Lock()
	c.l.got.Write(b[:n])
	c.l.mu.Unlock()
	return n, err
}

// The token never crosses the wire: a whole session of a client (handshake,
// requests) as the server's socket received it holds neither the token nor
// its hex form.
func TestTokenNeverSent(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	rec := &recordingListener{Listener: ln}
	s := Serve(rec, testToken, t.Logf)
	t.Cleanup(func() { s.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := Dial(ctx, s.Addr().String(), testToken, "ns/")
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Set(ctx, "k", []byte("value")); err != nil {
		t.Fatal(err)
	}
	c.Close()
	if err := s.WaitIdle(ctx); err != nil { // the server has read all the client sent
		t.Fatal(err)
	}
	rec.mu.Lock()
	sent := rec.got.Bytes()
	rec.mu.Unlock()
	if !bytes.Contains(sent, []byte("value")) {
		t.Fatalf("recorded %d bytes without the request: the recording misses the session", len(sent))
	}
	for _, secret := range []string{testToken, hex.EncodeToString([]byte(testToken))} {
		if bytes.Contains(sent, []byte(secret)) {
			t.Errorf("the client sent the token (%q) over the wire: %q", secret, sent)
		}
	}
}

// hostile is one kind of token-less connection.
type hostile struct {
	name string
	send []byte
}

func hostileHellos() []hostile {
	frame := binary.BigEndian.AppendUint32(nil, MaxFrame) // a frame header announcing the largest frame
	hello := append([]byte(storeMagic), make([]byte, NonceLen)...)
	return []hostile{
		{"frame header of MaxFrame bytes", append(frame, byte(opSet))},
		{"all ones length", []byte{0xff, 0xff, 0xff, 0xff, 0xff}},
		{"hello announcing the longest namespace, cut short", append(hello, MaxAbout, 'x')},
		{"hello with a forged proof", append(append(hello, 0), make([]byte, 32)...)},
	}
}

// Token-less connections that announce huge frames cost the listener no more
// than the handshake's few bytes each: 40 of them
// allocate less than 16 KiB apiece in all, counted by the Go heap's
// cumulative allocations (runtime.MemStats.TotalAlloc), and a real client
// joins afterwards. Each hostile connection sends its bytes and closes its
// side; the server's log line for it says it is done with it.
func TestUnauthenticatedConnectionsHoldLittle(t *testing.T) {
	s, lb := startServer(t)
	kinds := hostileHellos()
	const n = 40
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	conns := make([]net.Conn, n)
	for i := range conns {
		c, err := net.Dial("tcp", s.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		conns[i] = c
	}
	for i, c := range conns {
		c.Write(kinds[i%len(kinds)].send)
		c.(*net.TCPConn).CloseWrite()
	}
	for range n {
		<-lb.added
	}
	runtime.ReadMemStats(&after)
	const perConn = 16 << 10
	if got := after.TotalAlloc - before.TotalAlloc; got > n*perConn {
		t.Errorf("%d token-less connections made the process allocate %d KiB, want at most %d KiB (%d KiB each)",
			n, got>>10, n*perConn>>10, perConn>>10)
	} else {
		t.Logf("%d token-less connections: %d KiB allocated in all", n, got>>10)
	}
	log := lb.String()
	for _, want := range []string{"not a pplaunch PPS2 hello", "hello cut short", "wrong job token"} {
		if !strings.Contains(log, want) {
			t.Errorf("server log does not say %q:\n%s", want, log)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := dial(t, s, "").Set(ctx, "k", []byte("v")); err != nil {
		t.Fatalf("a real client after the hostile ones: %v", err)
	}
}

// greeted reads the server's greeting from c: the server has accepted c and
// runs its handshake.
func greeted(c net.Conn) error {
	greet := make([]byte, 4+NonceLen)
	_, err := io.ReadFull(c, greet)
	return err
}

// A client holding the token gets in while 200 silent connections wait for
// their hello: every connection is accepted at once, none waits behind
// another's handshake. The handshake deadline is an hour, far longer than
// the test: once the client is in, all 200 are still open and waiting
// (none timed out, none was refused), so it did not get in by outliving them.
func TestClientGetsInPastSilentConnections(t *testing.T) {
	s, lb := serveWith(t, admission{caps: DefaultPendingLimits, timeout: time.Hour})
	const silent = 200
	for range silent {
		c, err := net.Dial("tcp", s.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
	}
	// Closed before the silent connections are: they are cut off by the
	// server's end, not refused one by one into the log.
	defer s.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := dial(t, s, "").Set(ctx, "k", []byte("v")); err != nil {
		t.Fatalf("a client with the token, %d silent connections open: %v", silent, err)
	}
	if n := s.pending.Len(); n != silent {
		t.Errorf("%d connections wait for their hello once the client is in, want all %d silent ones", n, silent)
	}
	if log := lb.String(); log != "" {
		t.Errorf("the server refused connections meanwhile:\n%s", log)
	}
}

// serveWith starts a server on loopback that admits connections with adm.
func serveWith(t *testing.T, adm admission) (*Server, *logBuf) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	lb := newLogBuf()
	s := serve(ln, testToken, lb.logf, adm)
	t.Cleanup(func() { s.Close() })
	return s, lb
}

// closedByServer reads c to its end: the server closed it (not a timeout).
func closedByServer(t *testing.T, c net.Conn, what string) {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	var ne net.Error
	if _, err := io.Copy(io.Discard, c); errors.As(err, &ne) && ne.Timeout() {
		t.Errorf("%s: still open, want it dropped", what)
	}
}

// dialFrom connects to s from the loopback address ip (127.0.0.0/8 is all
// loopback on Linux), and waits for the greeting.
func dialFrom(t *testing.T, s *Server, ip string) net.Conn {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}
	c, err := d.Dial("tcp", s.Addr().String())
	if err != nil {
		t.Skipf("cannot dial from %s here: %v", ip, err)
	}
	t.Cleanup(func() { c.Close() })
	if err := greeted(c); err != nil {
		t.Fatal(err)
	}
	return c
}

// At the cap of one address, a new connection from it drops that address's
// oldest waiting one, and says so in the log; connections from other
// addresses stay.
func TestPendingCapPerSourceDropsOldest(t *testing.T) {
	s, lb := serveWith(t, admission{caps: PendingLimits{PerSource: 3, Total: 100}, timeout: time.Hour})
	other := dialFrom(t, s, "127.0.0.2")
	first := dialFrom(t, s, "127.0.0.1")
	for range 3 {
		dialFrom(t, s, "127.0.0.1")
	}
	dropped(t, s, lb, first, "dropped: 3 connections from 127.0.0.1 were waiting", 4)
	other.SetReadDeadline(time.Now().Add(50 * time.Millisecond)) // a negative check
	var ne net.Error
	if _, err := other.Read(make([]byte, 1)); !errors.As(err, &ne) || !ne.Timeout() {
		t.Errorf("the connection from 127.0.0.2 was dropped (%v): only 127.0.0.1 was at its cap", err)
	}
}

// At the cap of all waiting connections, a new one drops the oldest of all.
func TestPendingCapInAllDropsOldest(t *testing.T) {
	s, lb := serveWith(t, admission{caps: PendingLimits{PerSource: 10, Total: 2}, timeout: time.Hour})
	first := dialFrom(t, s, "127.0.0.2")
	dialFrom(t, s, "127.0.0.3")
	dialFrom(t, s, "127.0.0.4")
	dropped(t, s, lb, first, "dropped: 2 connections were waiting to prove the job token, the most a listener holds", 2)
}

// dropped checks that the server closed c, logged why (want), and that
// waiting connections are left.
func dropped(t *testing.T, s *Server, lb *logBuf, c net.Conn, want string, waiting int) {
	t.Helper()
	closedByServer(t, c, "the oldest connection past the cap")
	<-lb.added
	if !strings.Contains(lb.String(), want) {
		t.Errorf("server log does not say %q:\n%s", want, lb.String())
	}
	if n := s.pending.Len(); n != waiting {
		t.Errorf("%d connections wait, want %d", n, waiting)
	}
}

func TestEvictFor(t *testing.T) {
	lim := PendingLimits{PerSource: 3, Total: 5}
	for _, tc := range []struct {
		fromSource, total int
		want              evictKind
	}{
		{0, 0, evictNone},
		{2, 4, evictNone},
		{3, 3, evictOldestOfSource},
		{3, 5, evictOldestOfSource}, // its own source first: others are not pushed out by it
		{1, 5, evictOldest},
	} {
		if got := evictFor(tc.fromSource, tc.total, lim); got != tc.want {
			t.Errorf("evictFor(%d from its source, %d in all, %+v) = %v, want %v", tc.fromSource, tc.total, lim, got, tc.want)
		}
	}
}

// Each handshake has its own deadline: silent connections are dropped at it,
// naming the deadline.
func TestSilentConnectionsTimeOut(t *testing.T) {
	const limit = 2
	s, lb := serveWith(t, admission{caps: DefaultPendingLimits, timeout: 100 * time.Millisecond})
	var silent []string // their addresses, as the server's log names them
	for range limit {
		c, err := net.Dial("tcp", s.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if err := greeted(c); err != nil {
			t.Fatal(err)
		}
		silent = append(silent, c.LocalAddr().String())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := dial(t, s, "").Set(ctx, "k", []byte("v")); err != nil {
		t.Fatalf("a real client behind silent connections: %v", err)
	}
	// Each silent one is dropped, named with the deadline. (The real client's
	// handshake has the same deadline: on a loaded machine it may miss it and
	// dial again, which logs a line of its own, so lines are not counted.)
	for _, addr := range silent {
		want := "refused connection from " + addr + ": no complete hello within 100ms"
		for !strings.Contains(lb.String(), want) {
			select {
			case <-lb.added:
			case <-time.After(30 * time.Second): // guards against a hang only
				t.Fatalf("no line %q in the server's log:\n%s", want, lb.String())
			}
		}
	}
}

// A connection that never proves the token is no client: WaitIdle, which a
// rank hosting the store runs before it closes it, does not wait for it.
func TestWaitIdleIgnoresUnauthenticated(t *testing.T) {
	s, _ := startServer(t)
	silent, err := net.Dial("tcp", s.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	if err := greeted(silent); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), HandshakeTimeout/2)
	defer cancel()
	c, err := Dial(ctx, s.Addr().String(), testToken, "")
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	if err := s.WaitIdle(ctx); err != nil {
		t.Fatalf("WaitIdle with one silent connection open: %v", err)
	}
}

// Raised limits hold at least n; higher ones stay.
func TestPendingLimitsAtLeast(t *testing.T) {
	lim := PendingLimits{PerSource: 10, Total: 40}
	for _, tc := range []struct {
		n    int
		want PendingLimits
	}{
		{5, lim},
		{20, PendingLimits{PerSource: 20, Total: 40}},
		{100, PendingLimits{PerSource: 100, Total: 100}},
	} {
		if got := lim.AtLeast(tc.n); got != tc.want {
			t.Errorf("%+v.AtLeast(%d) = %+v, want %+v", lim, tc.n, got, tc.want)
		}
	}
}
