package collective

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net"
	"sync"
	"time"

	"github.com/pplaunch/pplaunch/store"
)

// What a rank's listener allows connections that have not proved the token
// is what the store allows them (store.Pending): every connection is accepted
// at once, each has its own deadline (handshakeLimit), at most
// store.MaxHello bytes are read from each, and the caps per source address
// and in all drop the oldest. Each refusal is logged (TCPOptions.Logf). Once
// every higher rank is in (or the wait gives up), the handshakes still running
// (a connection that never speaks) are cut off, not waited for.

// maxRefusals bounds the refused connections remembered for the error a rank
// gives when its world does not form; the rest are counted.
const maxRefusals = 8

// admitted is a connection that proved the token, from rank.
type admitted struct {
	rank int
	conn *net.TCPConn
}

// refusals keeps the first maxRefusals refused connections and counts the rest.
type refusals struct {
	mu     sync.Mutex
	first  []error
	others int
}

func (r *refusals) add(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.first) < maxRefusals {
		r.first = append(r.first, err)
	} else {
		r.others++
	}
}

func (r *refusals) all() []error {
	r.mu.Lock()
	defer r.mu.Unlock()
	errs := r.first
	if r.others > 0 {
		errs = append(errs, fmt.Errorf("and %d more refused connections", r.others))
	}
	return errs
}

// acceptPeers accepts connections until every higher rank has connected and
// proved the token, or ctx ends. Connections that fail the handshake are
// refused and remembered for the error message; they do not stop the wait.
func (t *tcpTransport) acceptPeers(ctx context.Context) error {
	want := t.size - 1 - t.rank
	if want == 0 {
		return nil
	}
	results := make(chan admitted)
	done := make(chan struct{})
	// Twice the peers that dial it: no peer of the world is ever dropped, even
	// with a stranger's connections from its address waiting beside them.
	pending := store.NewPending(store.DefaultPendingLimits.AtLeast(2 * want))
	refused := &refusals{}
	var wg sync.WaitGroup
	acceptEnded := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(acceptEnded)
		t.acceptLoop(ctx, done, results, pending, refused, &wg)
	}()
	var why error
	for want > 0 && why == nil {
		select {
		case res := <-results:
			if t.peers[res.rank] != nil {
				res.conn.Close()
				refused.add(fmt.Errorf("rank %d connected twice", res.rank))
				t.logf("rank %d: link listener %s: refused connection from %s: rank %d connected twice", t.rank, t.ln.Addr(), res.conn.RemoteAddr(), res.rank)
			} else {
				t.addPeer(res.rank, res.conn)
				want--
			}
		case <-ctx.Done():
			why = context.Cause(ctx)
		case <-acceptEnded:
			why = errors.New("listener closed")
		}
	}
	close(done)
	t.ln.Close()
	pending.CloseAll()
	wg.Wait()
	if want == 0 {
		return nil
	}
	var missing []int
	for r := t.rank + 1; r < t.size; r++ {
		if t.peers[r] == nil {
			missing = append(missing, r)
		}
	}
	// Every handshake has ended (wg), so every refusal is in.
	// The lowest missing rank is the one named as waited on (PeerError); the
	// text lists them all.
	wait := &PeerError{Peer: missing[0], Err: fmt.Errorf("waiting for ranks %v to connect: %w", missing, why)}
	return errors.Join(append([]error{wait}, refused.all()...)...)
}

// acceptLoop accepts connections until the listener closes and runs each
// one's handshake in its own goroutine (counted in wg): a refusal is logged
// and goes to refused, an admitted peer to results unless done is closed.
func (t *tcpTransport) acceptLoop(ctx context.Context, done <-chan struct{}, results chan<- admitted, pending *store.Pending, refused *refusals, wg *sync.WaitGroup) {
	var backoff time.Duration
	for {
		c, err := t.ln.Accept()
		if errors.Is(err, net.ErrClosed) {
			return
		}
		if err != nil {
			// Out of file descriptors, say: peers retry nothing, so keep
			// accepting (until the listener is closed).
			backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
			time.Sleep(backoff)
			continue
		}
		backoff = 0
		conn := c.(*net.TCPConn)
		if !pending.Add(conn) {
			conn.Close()
			return
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := t.handshakeAccept(ctx, conn)
			if why := pending.Done(conn); why != "" {
				err = errors.New(why)
			}
			if err != nil {
				conn.Close()
				t.refuse(conn, err, done, refused)
				return
			}
			select {
			case results <- admitted{r, conn}:
			case <-done:
				conn.Close()
			}
		}()
	}
}

// refuse logs and remembers a refused connection. A handshake that failed
// on its socket closed by acceptPeers (done: the world is complete, or the
// wait gave up) was cut off, not refused. A refusal that ends after done is
// still remembered: the impostor may have had its answer, and its caller
// given up, before this goroutine got here, and the rank's error must name
// it (TestTCPWrongTokenRefused).
func (t *tcpTransport) refuse(c net.Conn, err error, done <-chan struct{}, refused *refusals) {
	select {
	case <-done:
		if errors.Is(err, net.ErrClosed) {
			return
		}
	default:
	}
	refused.add(fmt.Errorf("refused %s: %w", c.RemoteAddr(), err))
	t.logf("rank %d: link listener %s: refused connection from %s: %v", t.rank, t.ln.Addr(), c.RemoteAddr(), err)
}

// logf logs a line of the listener's (TCPOptions.Logf).
func (t *tcpTransport) logf(format string, args ...any) {
	if t.opts.Logf != nil {
		t.opts.Logf(format, args...)
		return
	}
	log.Printf(format, args...)
}
