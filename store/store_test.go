package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

const testToken = "t0ken"

// logBuf collects a server's log lines.
type logBuf struct {
	mu    sync.Mutex
	lines []string
	added chan struct{}
}

func newLogBuf() *logBuf { return &logBuf{added: make(chan struct{}, 100)} }

func (l *logBuf) logf(format string, args ...any) {
	l.mu.Lock()
	l.lines = append(l.lines, fmt.Sprintf(format, args...))
	l.mu.Unlock()
	l.added <- struct{}{}
}

func (l *logBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n")
}

func startServer(t *testing.T) (*Server, *logBuf) {
	t.Helper()
	lb := newLogBuf()
	s, err := Listen("127.0.0.1:0", testToken, lb.logf)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, lb
}

func dial(t *testing.T, s *Server, ns string) *Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := Dial(ctx, s.Addr().String(), testToken, ns)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// testStore runs the Store contract against s.
func testStore(t *testing.T, s Store) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.Set(ctx, "a", []byte("1")); err != nil {
		t.Fatal(err)
	}
	if v, err := s.Get(ctx, "a"); err != nil || string(v) != "1" {
		t.Fatalf("get a = %q, %v", v, err)
	}
	if n, err := s.Add(ctx, "n", 5); err != nil || n != 5 {
		t.Fatalf("add = %d, %v", n, err)
	}
	if n, err := s.Add(ctx, "n", -2); err != nil || n != 3 {
		t.Fatalf("add = %d, %v", n, err)
	}
	if _, err := s.Add(ctx, "a", 1); err != nil {
		t.Fatalf("add to a numeric value: %v", err)
	}
	s.Set(ctx, "text", []byte("x"))
	if _, err := s.Add(ctx, "text", 1); err == nil || !strings.Contains(err.Error(), "not an integer") {
		t.Fatalf("add to text: %v", err)
	}
	// CAS: absent key with nil expected, then a mismatch, then a match.
	if cur, ok, err := s.CompareAndSet(ctx, "c", nil, []byte("v1")); err != nil || !ok || string(cur) != "v1" {
		t.Fatalf("cas absent = %q %v %v", cur, ok, err)
	}
	if cur, ok, err := s.CompareAndSet(ctx, "c", []byte("nope"), []byte("v2")); err != nil || ok || string(cur) != "v1" {
		t.Fatalf("cas mismatch = %q %v %v", cur, ok, err)
	}
	if cur, ok, err := s.CompareAndSet(ctx, "c", nil, []byte("v2")); err != nil || ok || string(cur) != "v1" {
		t.Fatalf("cas nil on present key = %q %v %v", cur, ok, err)
	}
	if cur, ok, err := s.CompareAndSet(ctx, "c", []byte("v1"), []byte("v2")); err != nil || !ok || string(cur) != "v2" {
		t.Fatalf("cas match = %q %v %v", cur, ok, err)
	}
	// Empty value is a value, distinct from absence.
	s.Set(ctx, "e", []byte{})
	if cur, ok, err := s.CompareAndSet(ctx, "e", []byte{}, []byte("full")); err != nil || !ok || string(cur) != "full" {
		t.Fatalf("cas on empty value = %q %v %v", cur, ok, err)
	}
	// Wait returns once a later Set lands.
	done := make(chan error, 1)
	go func() { done <- s.Wait(ctx, "a", "late") }()
	s.Set(ctx, "late", []byte("here"))
	if err := <-done; err != nil {
		t.Fatalf("wait: %v", err)
	}
	n, err := s.Count(ctx)
	if err != nil || n != 6 {
		t.Fatalf("count = %d, %v; want 6", n, err)
	}
	if ok, err := s.Delete(ctx, "a"); err != nil || !ok {
		t.Fatalf("delete a = %v, %v", ok, err)
	}
	if ok, err := s.Delete(ctx, "a"); err != nil || ok {
		t.Fatalf("delete a again = %v, %v", ok, err)
	}
	short, cancel2 := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel2()
	if _, err := s.Get(short, "a"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("get of a deleted key: %v, want a deadline error", err)
	}
}

func TestMemory(t *testing.T) { testStore(t, NewMemory()) }

func TestClient(t *testing.T) {
	s, _ := startServer(t)
	testStore(t, dial(t, s, ""))
}

func TestConcurrentAdders(t *testing.T) {
	s, _ := startServer(t)
	const clients, adds = 256, 20
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	errs := make(chan error, clients)
	for i := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := Dial(ctx, s.Addr().String(), testToken, "")
			if err != nil {
				errs <- err
				return
			}
			defer c.Close()
			for range adds {
				if _, err := c.Add(ctx, "counter", int64(i+1)); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	got, err := dial(t, s, "").Add(ctx, "counter", 0)
	want := int64(adds * clients * (clients + 1) / 2)
	if err != nil || got != want {
		t.Fatalf("counter = %d, %v; want %d", got, err, want)
	}
}

func TestWrongTokenRefused(t *testing.T) {
	s, lb := startServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := Dial(ctx, s.Addr().String(), "guess", "")
	want := "store " + s.Addr().String() + ": store refused the connection: wrong job token (every node of the job must export the same PPLAUNCH_TOKEN)"
	if !errors.Is(err, ErrRefused) || err.Error() != want {
		t.Fatalf("dial with a wrong token: %v, %v; want ErrRefused: %s", c, err, want)
	}
	<-lb.added
	if log := lb.String(); !strings.Contains(log, "refused connection from 127.0.0.1:") || !strings.Contains(log, "wrong job token") || strings.Contains(log, testToken) {
		t.Fatalf("server log %q does not name the refused peer (or names the token)", log)
	}
	// A peer that skips the handshake is refused too.
	raw, err := net.Dial("tcp", s.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	raw.Write(appendMsg(nil, &msg{op: opSet, key: "k", val: []byte("v")}))
	<-lb.added
	if !strings.Contains(lb.String(), "not a pplaunch PPS2 hello") {
		t.Fatalf("server log %q does not mention the missing hello", lb.String())
	}
	if n, err := dial(t, s, "").Count(ctx); err != nil || n != 0 {
		t.Fatalf("count after refused writes = %d, %v; want 0", n, err)
	}
}

func TestGetDeadline(t *testing.T) {
	s, _ := startServer(t)
	c := dial(t, s, "")
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, err := c.Get(ctx, "never")
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), `get "never"`) {
		t.Fatalf("get of a missing key: %v; want a deadline error naming the key", err)
	}
	if err := c.Wait(ctx, "never", "either"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("wait: %v", err)
	}
	// The connection still works, and the server let go of the waiters.
	ctx2, cancel2 := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel2()
	if err := c.Set(ctx2, "k", []byte("v")); err != nil {
		t.Fatal(err)
	}
}

func TestNamespaces(t *testing.T) {
	s, _ := startServer(t)
	a, b := dial(t, s, "a/"), dial(t, s, "b/")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	a.Set(ctx, "k", []byte("from a"))
	b.Set(ctx, "k", []byte("from b"))
	b.Set(ctx, "k2", nil)
	if v, _ := a.Get(ctx, "k"); string(v) != "from a" {
		t.Fatalf("a sees %q", v)
	}
	if n, _ := a.Count(ctx); n != 1 {
		t.Fatalf("a counts %d keys, want 1", n)
	}
	if n, _ := dial(t, s, "").Count(ctx); n != 3 {
		t.Fatalf("root counts %d keys, want 3", n)
	}
}

func TestBarrier(t *testing.T) {
	s, _ := startServer(t)
	const n = 8
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	errs := make(chan error, n)
	var passed sync.WaitGroup
	passed.Add(n)
	for range n {
		c := dial(t, s, "job/")
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := c.Add(ctx, "before", 1); err != nil {
				errs <- err
				return
			}
			if err := Barrier(ctx, c, "b0", n); err != nil {
				errs <- err
				return
			}
			// Everyone counted before anyone passed.
			if v, err := c.Add(ctx, "before", 0); err != nil || v != n {
				errs <- fmt.Errorf("past the barrier with %d of %d arrived (%v)", v, n, err)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	short, cancel2 := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel2()
	err := Barrier(short, dial(t, s, "job/"), "b1", 3)
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "1 of 3 parties arrived") {
		t.Fatalf("lonely barrier: %v", err)
	}
}

// Dial retries while the store is not up: its first attempt meets a port
// that hangs up at once (as while an agent restarts), so the success that
// follows can only come from a retry.
func TestDialRetriesUntilListening(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	got := make(chan error, 1)
	go func() {
		c, err := Dial(ctx, addr, testToken, "")
		if err == nil {
			err = c.Set(ctx, "k", []byte("v"))
			c.Close()
		}
		got <- err
	}()
	first, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	first.Close()
	ln.Close()
	s, err := Listen(addr, testToken, t.Logf)
	if err != nil {
		t.Skipf("port %s was taken again before the test could listen: %v", addr, err)
	}
	defer s.Close()
	if err := <-got; err != nil {
		t.Fatal(err)
	}
	short, cancel2 := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel2()
	s.Close()
	if _, err := Dial(short, addr, testToken, ""); !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "not reachable") {
		t.Fatalf("dial to a closed store: %v", err)
	}
}

func TestServerGoneFailsBlockedCalls(t *testing.T) {
	s, _ := startServer(t)
	c := dial(t, s, "")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := c.Get(ctx, "never")
		done <- err
	}()
	// Make sure the get reached the server before closing it.
	c.Set(ctx, "sync", nil)
	s.Close()
	err := <-done
	if err == nil || errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("blocked get after the server closed: %v", err)
	}
	if err := c.Set(ctx, "k", nil); err == nil {
		t.Fatal("set after the server closed succeeded")
	}
}

func TestMalformedFrameDropsConnection(t *testing.T) {
	s, lb := startServer(t)
	raw, err := net.Dial("tcp", s.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	if err := DialHandshake(raw, storeMagic, testToken, nil); err != nil {
		t.Fatal(err)
	}
	raw.Write([]byte{0xff, 0xff, 0xff, 0xff})
	<-lb.added
	if !strings.Contains(lb.String(), "exceeds the limit") {
		t.Fatalf("server log %q", lb.String())
	}
	if _, _, err := readMsg(raw, nil); err == nil {
		t.Fatal("connection still open after a malformed frame")
	}
}

func TestClientRefusesOversizedValue(t *testing.T) {
	s, _ := startServer(t)
	c := dial(t, s, "")
	err := c.Set(context.Background(), "big", make([]byte, MaxValue+1))
	if err == nil || !strings.Contains(err.Error(), "exceeds the limit") {
		t.Fatalf("oversized set: %v", err)
	}
}

func TestWireRoundTrip(t *testing.T) {
	for _, m := range []*msg{
		{op: opHello, key: "ns/", val: []byte("tok")},
		{op: opCAS, id: 7, flags: flagHasExp, key: "k", val: []byte("new"), exp: []byte("old")},
		{op: opWait, id: 1 << 60, keys: []string{"a", "", "c"}},
		{op: opReply, id: 3, n: -42, err: "boom"},
	} {
		b := appendMsg(nil, m)
		got, _, err := readMsg(bytes.NewReader(b), nil)
		if err != nil {
			t.Fatalf("%s: %v", m.op, err)
		}
		if !sameMsg(got, m) {
			t.Fatalf("round trip of %+v gave %+v", m, got)
		}
	}
}

func sameMsg(a, b *msg) bool {
	if len(a.keys) != len(b.keys) {
		return false
	}
	for i := range a.keys {
		if a.keys[i] != b.keys[i] {
			return false
		}
	}
	return a.op == b.op && a.id == b.id && a.n == b.n && a.flags == b.flags && a.key == b.key &&
		bytes.Equal(a.val, b.val) && bytes.Equal(a.exp, b.exp) && a.err == b.err
}

func FuzzDecode(f *testing.F) {
	for _, m := range []*msg{
		{op: opHello, key: "ns/", val: []byte("tok")},
		{op: opCAS, id: 7, flags: flagHasExp, key: "k", val: []byte("new"), exp: []byte("old")},
		{op: opWait, keys: []string{"a", "b"}},
		{op: opReply, n: 5, err: "x"},
	} {
		f.Add(appendMsg(nil, m)[4:])
	}
	f.Add([]byte{})
	f.Add([]byte{1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, body []byte) {
		m, err := decodeMsg(body)
		if err != nil {
			if !errors.Is(err, errFrame) {
				t.Fatalf("error %v is not errFrame", err)
			}
			return
		}
		again, err := decodeMsg(appendMsg(nil, m)[4:])
		if err != nil || !sameMsg(m, again) {
			t.Fatalf("re-encoding %+v: %+v, %v", m, again, err)
		}
	})
}

// flakyListener fails its first Accept calls as a listener out of file
// descriptors does.
type flakyListener struct {
	net.Listener
	fails int
}

func (l *flakyListener) Accept() (net.Conn, error) {
	if l.fails > 0 {
		l.fails--
		return nil, fmt.Errorf("accept: %w", syscall.EMFILE)
	}
	return l.Listener.Accept()
}

// A failed accept is logged and retried: the store keeps serving the job.
func TestServerSurvivesAcceptErrors(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	lb := newLogBuf()
	s := Serve(&flakyListener{Listener: ln, fails: 3}, testToken, lb.logf)
	t.Cleanup(func() { s.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := dial(t, s, "").Set(ctx, "k", []byte("v")); err != nil {
		t.Fatalf("set after accept errors: %v", err)
	}
	if n := strings.Count(lb.String(), "too many open files; retrying"); n != 3 {
		t.Errorf("%d accept errors logged, want 3:\n%s", n, lb.String())
	}
}
