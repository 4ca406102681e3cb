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
// than the handshake's few bytes each: 40 of them (more than MaxHandshakes)
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

// Past the limit of concurrent handshakes the server accepts nothing more
// until one ends: the next connection is not greeted while the limit's worth
// of silent connections are held, and is as soon as one of them leaves.
func TestHandshakesBeyondTheLimitWait(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	const limit = 4
	s := serve(ln, testToken, t.Logf, admission{handshakes: limit, timeout: time.Hour})
	t.Cleanup(func() { s.Close() })
	silent := make([]net.Conn, limit+1)
	for i := range silent {
		c, err := net.Dial("tcp", s.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		silent[i] = c
	}
	for _, c := range silent[:limit] {
		if err := greeted(c); err != nil {
			t.Fatal(err)
		}
	}
	// A negative check: it cannot fail when the server waits as it should.
	last := silent[limit]
	last.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
	var ne net.Error
	if err := greeted(last); !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("connection %d of a limit of %d was greeted (%v): the server holds more than the limit", limit+1, limit, err)
	}
	silent[0].Close()
	last.SetReadDeadline(time.Now().Add(10 * time.Second))
	if err := greeted(last); err != nil {
		t.Fatalf("the waiting connection was not greeted once a slot was free: %v", err)
	}
}

// Each handshake has its own deadline: silent connections holding every slot
// are dropped at it, naming the deadline, and a real client then joins.
func TestSilentConnectionsTimeOut(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	lb := newLogBuf()
	const limit = 2
	s := serve(ln, testToken, lb.logf, admission{handshakes: limit, timeout: 100 * time.Millisecond})
	t.Cleanup(func() { s.Close() })
	for range limit {
		c, err := net.Dial("tcp", s.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if err := greeted(c); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := dial(t, s, "").Set(ctx, "k", []byte("v")); err != nil {
		t.Fatalf("a real client behind silent connections: %v", err)
	}
	for range limit {
		<-lb.added
	}
	if got := strings.Count(lb.String(), "no complete hello within 100ms"); got != limit {
		t.Errorf("server log names %d timed-out handshakes, want %d:\n%s", got, limit, lb.String())
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
