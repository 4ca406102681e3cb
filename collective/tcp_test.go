package collective

import (
	"bufio"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pplaunch/pplaunch/store"
)

// A rank that presents the wrong job token is refused; the rank it tried to
// join names the refusal when it gives up waiting. Rank 0 gives up only once
// the impostor has had its answer, so the refusal is always in its error.
func TestTCPWrongTokenRefused(t *testing.T) {
	st := store.NewMemory()
	ctx, cancel := context.WithCancel(testCtx(t))
	defer cancel()
	errs := make([]error, 2)
	var wg sync.WaitGroup
	wg.Go(func() {
		c, err := NewTCP(ctx, st, 0, 2, TCPOptions{Token: testToken})
		if c != nil {
			c.Close()
		}
		errs[0] = err
	})
	c, err := NewTCP(ctx, st, 1, 2, TCPOptions{Token: "not-the-token"})
	if c != nil {
		c.Close()
	}
	errs[1] = err
	cancel()
	wg.Wait()
	if errs[1] == nil || !strings.Contains(errs[1].Error(), "rank 0 refused the connection: wrong job token") {
		t.Errorf("impostor: %v, want a refusal for the wrong token", errs[1])
	}
	if errs[0] == nil || !strings.Contains(errs[0].Error(), "waiting for ranks [1] to connect") || !strings.Contains(errs[0].Error(), "wrong job token") {
		t.Errorf("rank 0: %v, want it to name the missing rank and the refusal", errs[0])
	}
}

// Stray connections (garbage, or a caller without the token) are refused
// without disturbing the world forming around them.
func TestTCPStrayConnectionsRefused(t *testing.T) {
	st := store.NewMemory()
	ctx := testCtx(t)
	addr, joined := startRank0(t, st, Options{})
	for _, hello := range []string{"GET / HTTP/1.1\r\n\r\n" + strings.Repeat("x", 80), "PPH1" + strings.Repeat("\x00", 64)} {
		conn, err := net.Dial("tcp", string(addr))
		if err != nil {
			t.Fatal(err)
		}
		greet := make([]byte, 4+nonceLen)
		if _, err := io.ReadFull(conn, greet); err != nil {
			t.Fatal(err)
		}
		conn.Write([]byte(hello))
		reply, _ := io.ReadAll(conn)
		if len(reply) < 3 || reply[0] != 1 {
			t.Errorf("stray hello %q: reply %q, want a refusal", hello[:8], reply)
		}
		conn.Close()
	}
	c1, err := NewTCP(ctx, st, 1, 2, TCPOptions{Token: testToken})
	if err != nil {
		t.Fatal(err)
	}
	defer c1.Close()
	c0 := joined()
	if err := c1.Send(ctx, 0, Tag{}, F32([]float32{5})); err != nil {
		t.Fatal(err)
	}
	x := make([]float32, 1)
	if err := c0.Recv(ctx, 1, Tag{}, F32(x)); err != nil || x[0] != 5 {
		t.Fatalf("after stray connections: %v %v", x, err)
	}
}

// A peer process killed with SIGKILL while it streams large messages: the
// rank waiting on it gets an error naming it at once, not at its deadline.
func TestTCPPeerProcessKilledMidTransfer(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns a process")
	}
	st := store.NewMemory()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperChildRank$")
	cmd.Env = append(os.Environ(), "COLLECTIVE_TEST_CHILD=1")
	cmd.Stderr = os.Stderr
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	defer cmd.Process.Kill()
	go serveStore(ctx, st, stdout, stdin)
	c, err := NewTCP(ctx, st, 0, 2, TCPOptions{Token: testToken})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	buf := make([]float32, childElems)
	if err := c.Recv(ctx, 1, Tag{Kind: Activation}, F32(buf)); err != nil {
		t.Fatal(err)
	}
	if buf[childElems-1] != 1 {
		t.Fatalf("first message from the child: last element %v", buf[childElems-1])
	}
	h := c.Irecv(1, Tag{Kind: Gradient}, F32(buf)) // never sent: only the kill ends it
	cmd.Process.Kill()
	err = h.Wait(ctx)
	if err == nil || !strings.Contains(err.Error(), "from rank 1: rank 1 is gone") || errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("after the kill: %v, want an error naming rank 1", err)
	}
}

const childElems = 1 << 20

// TestHelperChildRank is rank 1 of TestTCPPeerProcessKilledMidTransfer, in its
// own process; it streams messages until it is killed.
func TestHelperChildRank(t *testing.T) {
	if os.Getenv("COLLECTIVE_TEST_CHILD") != "1" {
		t.Skip("helper process for TestTCPPeerProcessKilledMidTransfer")
	}
	ctx := context.Background()
	c, err := NewTCP(ctx, &pipeStore{r: bufio.NewReader(os.Stdin), w: os.Stdout}, 1, 2, TCPOptions{Token: testToken})
	if err != nil {
		t.Fatal(err)
	}
	x := make([]float32, childElems)
	for i := range x {
		x[i] = 1
	}
	for {
		if err := c.Send(ctx, 0, Tag{Kind: Activation}, F32(x)); err != nil {
			t.Fatal(err)
		}
	}
}

// pipeStore is the child's store: Set and Get forwarded over its stdio to the
// parent's in-process store (serveStore).
type pipeStore struct {
	store.Store // other methods are not used by NewTCP
	mu          sync.Mutex
	r           *bufio.Reader
	w           io.Writer
}

func (p *pipeStore) call(line string) (string, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprintln(p.w, line)
	reply, err := p.r.ReadString('\n')
	if err != nil {
		return "", err
	}
	reply = strings.TrimSpace(reply)
	if msg, ok := strings.CutPrefix(reply, "ERR "); ok {
		return "", errors.New(msg)
	}
	return strings.TrimPrefix(reply, "VAL "), nil
}

func (p *pipeStore) Set(ctx context.Context, key string, v []byte) error {
	_, err := p.call("SET " + key + " " + base64.StdEncoding.EncodeToString(v))
	return err
}

func (p *pipeStore) Get(ctx context.Context, key string) ([]byte, error) {
	v, err := p.call("GET " + key)
	if err != nil {
		return nil, err
	}
	return base64.StdEncoding.DecodeString(v)
}

func serveStore(ctx context.Context, st store.Store, r io.Reader, w io.Writer) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		reply := "ERR bad request"
		switch {
		case len(f) == 3 && f[0] == "SET":
			v, _ := base64.StdEncoding.DecodeString(f[2])
			reply = "VAL "
			if err := st.Set(ctx, f[1], v); err != nil {
				reply = "ERR " + err.Error()
			}
		case len(f) == 2 && f[0] == "GET":
			v, err := st.Get(ctx, f[1])
			reply = "VAL " + base64.StdEncoding.EncodeToString(v)
			if err != nil {
				reply = "ERR " + err.Error()
			}
		}
		fmt.Fprintln(w, reply)
	}
}

// A peer that holds the token but sends a corrupt frame: the link is dropped
// and the waiting receive names the peer and what was wrong.
func TestTCPCorruptFrameNamesPeer(t *testing.T) {
	c0, conn := fakePeer(t, Options{})
	ctx := testCtx(t)
	h := c0.Irecv(1, Tag{Kind: Activation}, F32(make([]float32, 4)))
	var b [headerMax]byte
	n := encodeHeader(b[:], &header{tag: Tag{Kind: Activation}, dtype: Float32, ndim: 1, dims: [MaxDims]int{4}, nbytes: 16})
	b[24] = 17 // payload length disagrees with the shape
	conn.Write(b[:n])
	err := h.Wait(ctx)
	if err == nil || !strings.Contains(err.Error(), "corrupt frame from rank 1: frame payload is 17 bytes but shape [4] of float32 needs 16") {
		t.Fatalf("corrupt frame: %v", err)
	}
}

// fakePeer joins a 2-rank world as rank 1 by hand: it holds the token but
// never reads, so rank 0's sends eventually fill the socket.
func fakePeer(t *testing.T, opts Options) (Comm, net.Conn) {
	st := store.NewMemory()
	ctx := testCtx(t)
	addr, joined := startRank0(t, st, opts)
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	fake := &tcpTransport{rank: 1, size: 2, opts: TCPOptions{Token: testToken}}
	if err := fake.handshakeDial(ctx, conn.(*net.TCPConn), 0); err != nil {
		t.Fatal(err)
	}
	st.Set(ctx, "collective/addr/1", []byte("fake"))
	return joined(), conn
}

// startRank0 starts rank 0 of a 2-rank TCP world in the background and
// returns the address it published; joined waits until rank 0's NewTCP has
// returned and gives its communicator, closed when the test ends.
func startRank0(t *testing.T, st store.Store, opts Options) (addr string, joined func() Comm) {
	t.Helper()
	ctx := testCtx(t)
	done := make(chan error, 1)
	var c0 Comm
	go func() {
		var err error
		c0, err = NewTCP(ctx, st, 0, 2, TCPOptions{Options: opts, Token: testToken})
		done <- err
	}()
	a, err := st.Get(ctx, "collective/addr/0")
	if err != nil {
		t.Fatal(err)
	}
	return string(a), func() Comm {
		t.Helper()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c0.Close() })
		return c0
	}
}

// Sends to a peer that stops draining its socket fail at the deadline, both
// large ones (queued for the writer) and small ones (written inline).
func TestTCPSendToStalledPeerTimesOut(t *testing.T) {
	for _, size := range []int{1 << 18, 256} {
		t.Run(fmt.Sprint(size), func(t *testing.T) {
			c, _ := fakePeer(t, Options{Timeout: 100 * time.Millisecond})
			x := F32(make([]float32, size))
			var err error
			for i := 0; err == nil; i++ {
				if i > 1<<20 {
					t.Fatal("a peer that never reads took a million messages")
				}
				err = c.Send(context.Background(), 1, Tag{Kind: Activation, MicroBatch: uint32(i)}, x)
			}
			t.Log(err)
			if !strings.Contains(err.Error(), "to rank 1") || !(errors.Is(err, context.DeadlineExceeded) || strings.Contains(err.Error(), "timeout")) {
				t.Fatalf("send to a stalled peer: %v, want a timeout naming rank 1", err)
			}
		})
	}
}

// In steady state a link allocates no payload-sized buffers: a receive posted
// first is filled straight from the socket, and a message that comes first
// is staged in a reused buffer. Each way, 32 messages of 1 MiB must allocate
// less than two messages' size. One goroutine drives both ranks, so at most
// one message is in flight: the pool needs at most two buffers (the reader
// may return a bound message's buffer just after its receive completes, when
// the next message is already being staged), so the count does not depend on
// scheduling.
func TestTCPSteadyStateAllocatesNoPayloads(t *testing.T) {
	cs := tcpWorld(t, 2, Options{})
	ctx := testCtx(t)
	const elems = 1 << 18 // 1 MiB
	out, in := make([]float32, elems), make([]float32, elems)
	tag := Tag{Kind: Activation}
	ways := []struct {
		name string
		xfer func() error
	}{
		{"receive posted first", func() error {
			h := cs[1].Irecv(0, tag, F32(in))
			if err := cs[0].Send(ctx, 1, tag, F32(out)); err != nil {
				return err
			}
			return h.Wait(ctx)
		}},
		{"message first", func() error {
			if err := cs[0].Send(ctx, 1, tag, F32(out)); err != nil {
				return err
			}
			return cs[1].Recv(ctx, 0, tag, F32(in))
		}},
	}
	for _, w := range ways {
		for range 2 { // warm up: staging buffers, goroutines
			if err := w.xfer(); err != nil {
				t.Fatal(err)
			}
		}
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		for range 32 {
			if err := w.xfer(); err != nil {
				t.Fatal(err)
			}
		}
		runtime.ReadMemStats(&after)
		if got := after.TotalAlloc - before.TotalAlloc; got >= 2*4*elems {
			t.Errorf("%s: 32 messages of %d bytes allocated %d bytes; want less than two messages", w.name, 4*elems, got)
		} else {
			t.Logf("%s: 32 messages of %d bytes allocated %d bytes", w.name, 4*elems, got)
		}
	}
}

// A rank that gives up waiting for a peer at the start says which one
// (PeerError): the lowest missing rank it accepts from, or the rank whose
// address it looked up in vain.
func TestTCPWaitNamesThePeer(t *testing.T) {
	for _, tc := range []struct{ rank, want int }{{0, 1}, {2, 0}} {
		ctx, cancel := context.WithTimeout(testCtx(t), 50*time.Millisecond)
		c, err := NewTCP(ctx, store.NewMemory(), tc.rank, 3, TCPOptions{Token: testToken})
		cancel()
		if c != nil {
			c.Close()
		}
		var pe *PeerError
		if !errors.As(err, &pe) || pe.Peer != tc.want || !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("rank %d alone: %v (%#v), want a PeerError for rank %d with the deadline", tc.rank, err, pe, tc.want)
		}
	}
}
