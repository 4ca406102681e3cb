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
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pplaunch/pplaunch/ranks/store"
)

// A rank that presents the wrong job token is refused; the rank it tried to
// join names the refusal when it gives up waiting.
func TestTCPWrongTokenRefused(t *testing.T) {
	st := store.NewMemory()
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for r, tok := range []string{testToken, "not-the-token"} {
		wg.Go(func() {
			c, err := NewTCP(ctx, st, r, 2, TCPOptions{Token: tok})
			if c != nil {
				c.Close()
			}
			errs[r] = err
		})
	}
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
	done := make(chan error, 1)
	var c0 Comm
	go func() {
		var err error
		c0, err = NewTCP(ctx, st, 0, 2, TCPOptions{Token: testToken})
		done <- err
	}()
	addr, err := st.Get(ctx, "collective/addr/0")
	if err != nil {
		t.Fatal(err)
	}
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
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	defer c0.Close()
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
