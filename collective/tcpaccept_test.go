package collective

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pplaunch/pplaunch/store"
)

// startRanks starts NewTCP for the given ranks of a world of size in the
// background; wait returns their communicators (closed when the test ends)
// and fails the test on any error.
func startRanks(t *testing.T, ctx context.Context, st store.Store, size int, ranks []int, opts TCPOptions) (wait func() []Comm) {
	t.Helper()
	cs := make([]Comm, len(ranks))
	errs := make([]error, len(ranks))
	var wg sync.WaitGroup
	for i, r := range ranks {
		wg.Go(func() { cs[i], errs[i] = NewTCP(ctx, st, r, size, opts) })
	}
	return func() []Comm {
		t.Helper()
		wg.Wait()
		t.Cleanup(func() { closeAll(cs) })
		for i, err := range errs {
			if err != nil {
				t.Fatalf("rank %d: %v", ranks[i], err)
			}
		}
		return cs
	}
}

// dialGreeted connects to the rank listening at addr and reads its greeting:
// the rank has accepted the connection and runs its handshake.
func dialGreeted(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	greet := make([]byte, 4+nonceLen)
	if _, err := io.ReadFull(c, greet); err != nil {
		t.Fatal(err)
	}
	return c
}

func addrOf(t *testing.T, ctx context.Context, st store.Store, rank int) string {
	t.Helper()
	a, err := st.Get(ctx, "collective/addr/"+strconv.Itoa(rank))
	if err != nil {
		t.Fatal(err)
	}
	return string(a)
}

// exchange checks that rank from's message reaches rank to.
func exchange(t *testing.T, ctx context.Context, cs []Comm, from, to int) {
	t.Helper()
	errc := make(chan error, 1)
	go func() { errc <- cs[from].Send(ctx, to, Tag{}, F32([]float32{float32(from)})) }()
	x := make([]float32, 1)
	if err := cs[to].Recv(ctx, from, Tag{}, F32(x)); err != nil || x[0] != float32(from) {
		t.Fatalf("rank %d from rank %d: %v %v", to, from, x, err)
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
}

// A connection that never speaks, made to ranks' listeners while the world
// connects, holds up nothing: the three ranks join as if it were not there,
// and each listener then closes it rather than waiting for its handshake.
func TestTCPSilentConnectionDoesNotHoldTheWorld(t *testing.T) {
	st := store.NewMemory()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	first := startRanks(t, ctx, st, 3, []int{0, 1}, TCPOptions{Token: testToken})
	silent := []net.Conn{dialGreeted(t, addrOf(t, ctx, st, 0)), dialGreeted(t, addrOf(t, ctx, st, 1))}
	last := startRanks(t, ctx, st, 3, []int{2}, TCPOptions{Token: testToken})
	cs := append(first(), last()...)
	if ctx.Err() != nil {
		t.Fatal("the world formed only at its deadline: the silent connections held it up")
	}
	for i, c := range silent {
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		if n, err := io.Copy(io.Discard, c); err != nil || n != 0 {
			t.Errorf("silent connection to rank %d: read %d bytes, %v; want it closed by the rank", i, n, err)
		}
	}
	exchange(t, ctx, cs, 2, 0)
	exchange(t, ctx, cs, 1, 0)
}

// The real peers get in while 200 silent connections to rank 0's listener
// wait for their hello: every connection is accepted at once. The handshake
// deadline is an hour, far longer than the test, so the peers did not get in
// by outliving the silent connections: each of those is still open (its
// read stops at the test's own short deadline, not at the end of the
// connection) until the rank cuts them off once its world is complete.
func TestTCPPeersGetInPastSilentConnections(t *testing.T) {
	st := store.NewMemory()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var logged lines
	opts := TCPOptions{Token: testToken, handshakeTimeout: time.Hour, Logf: logged.logf}
	rank0 := startRanks(t, ctx, st, 3, []int{0}, opts)
	addr := addrOf(t, ctx, st, 0)
	silent := make([]net.Conn, 200)
	for i := range silent {
		silent[i] = dialGreeted(t, addr)
	}
	rest := startRanks(t, ctx, st, 3, []int{1, 2}, opts)
	cs := append(rank0(), rest()...)
	exchange(t, ctx, cs, 2, 0)
	for i, c := range silent {
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		if n, err := io.Copy(io.Discard, c); err != nil || n != 0 {
			t.Fatalf("silent connection %d: read %d bytes, %v; want it open until the world was complete, then closed", i, n, err)
		}
	}
	if l := logged.String(); l != "" {
		t.Errorf("the rank refused connections meanwhile (the silent ones were cut off, not refused):\n%s", l)
	}
}

// A stranger's connection to a rank's listener is refused and logged, as the
// store logs those it refuses, naming where it came from and why.
func TestTCPRefusalIsLogged(t *testing.T) {
	st := store.NewMemory()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var logged lines
	opts := TCPOptions{Token: testToken, Logf: logged.logf}
	rank0 := startRanks(t, ctx, st, 2, []int{0}, opts)
	addr := addrOf(t, ctx, st, 0)
	c := dialGreeted(t, addr)
	c.Write([]byte("GET / HTTP/1.1\r\n\r\n"))
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	io.Copy(io.Discard, c) // refused: the rank closes it
	rest := startRanks(t, ctx, st, 2, []int{1}, TCPOptions{Token: testToken})
	cs := append(rank0(), rest()...)
	exchange(t, ctx, cs, 1, 0)
	want := regexp.MustCompile(`rank 0: link listener \S+: refused connection from ` + regexp.QuoteMeta(c.LocalAddr().String()) + `: not a pplaunch \S+ hello`)
	if !want.MatchString(logged.String()) {
		t.Errorf("the rank's log does not match %q:\n%s", want, logged.String())
	}
}

// lines collects log lines.
type lines struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lines) logf(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	fmt.Fprintf(&l.b, format+"\n", args...)
}

func (l *lines) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// Token-less connections to a rank's listener that announce huge frames cost
// it no more than a handshake's few bytes each: 40 of them allocate less than 16 KiB apiece in all, counted by
// the Go heap's cumulative allocations (runtime.MemStats.TotalAlloc); each is
// refused and closed, and the real peer joins afterwards.
func TestTCPUnauthenticatedConnectionsHoldLittle(t *testing.T) {
	st := store.NewMemory()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	rank0 := startRanks(t, ctx, st, 2, []int{0}, TCPOptions{Token: testToken})
	addr := addrOf(t, ctx, st, 0)
	hello := append([]byte(handshakeMagic), make([]byte, nonceLen)...)
	kinds := [][]byte{
		binary.BigEndian.AppendUint32(nil, 1<<31), // a frame header announcing 2 GiB
		{0xff, 0xff, 0xff, 0xff, 0xff},
		append(hello, store.MaxAbout, 'x'),                // the longest hello, cut short
		append(append(hello, 12), make([]byte, 12+32)...), // a forged proof
	}
	const n = 40
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	conns := make([]net.Conn, n)
	for i := range conns {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.Write(kinds[i%len(kinds)])
		c.(*net.TCPConn).CloseWrite()
		conns[i] = c
	}
	for i, c := range conns {
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		// The rank may reset a connection it stopped reading (an error here).
		var ne net.Error
		if _, err := io.Copy(io.Discard, c); errors.As(err, &ne) && ne.Timeout() {
			t.Fatalf("hostile connection %d was not closed by the rank: %v", i, err)
		}
	}
	runtime.ReadMemStats(&after)
	const perConn = 16 << 10
	if got := after.TotalAlloc - before.TotalAlloc; got > n*perConn {
		t.Errorf("%d token-less connections made the process allocate %d KiB, want at most %d KiB (%d KiB each)",
			n, got>>10, n*perConn>>10, perConn>>10)
	} else {
		t.Logf("%d token-less connections: %d KiB allocated in all", n, got>>10)
	}
	rest := startRanks(t, ctx, st, 2, []int{1}, TCPOptions{Token: testToken})
	cs := append(rank0(), rest()...)
	exchange(t, ctx, cs, 1, 0)
}

// A refusal that ends after the wait is over (done) is still remembered and
// logged: the impostor can have had its answer, and rank 0's caller given up,
// before the handshake's goroutine records it. Only a handshake cut off by
// the listener's own close is dropped.
func TestRefuseAfterDone(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	open, closed := make(chan struct{}), make(chan struct{})
	close(closed)
	cutOff := &net.OpError{Op: "read", Net: "tcp", Err: net.ErrClosed}
	for _, tc := range []struct {
		name string
		done chan struct{}
		err  error
		kept bool
	}{
		{"refused while waiting", open, errors.New("wrong job token"), true},
		{"refused after the wait ended", closed, errors.New("wrong job token"), true},
		{"cut off after the wait ended", closed, fmt.Errorf("hello cut short: %w", cutOff), false},
		{"a closed socket while still waiting", open, fmt.Errorf("hello cut short: %w", cutOff), true},
	} {
		var logged []string
		tr := &tcpTransport{opts: TCPOptions{Logf: func(f string, args ...any) { logged = append(logged, fmt.Sprintf(f, args...)) }}}
		tr.ln = dummyListener{}
		var r refusals
		tr.refuse(a, tc.err, tc.done, &r)
		if got := len(r.all()) == 1 && len(logged) == 1; got != tc.kept {
			t.Errorf("%s: remembered %v, logged %q; want kept=%v", tc.name, r.all(), logged, tc.kept)
		}
	}
}

// dummyListener is a listener that only has an address, for the log line.
type dummyListener struct{ net.Listener }

func (dummyListener) Addr() net.Addr { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 1} }
