package collective

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/pplaunch/pplaunch/ranks/store"
)

// What a rank's listener allows connections that have not proved the token:
// at most store.MaxHandshakes handshakes at once (the rest wait in the
// kernel's accept queue), each within its own deadline (handshakeLimit), at
// most store.MaxHello bytes read from each. Once every higher rank is in, the
// handshakes still running (a connection that never speaks) are cut off, not
// waited for.

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

// inHandshake is the set of connections whose handshake runs, so that they
// can be cut off at once when the world is complete.
type inHandshake struct {
	mu     sync.Mutex
	conns  map[*net.TCPConn]struct{}
	closed bool
}

// add registers c; false once the set is closed (c must then be closed).
func (h *inHandshake) add(c *net.TCPConn) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return false
	}
	h.conns[c] = struct{}{}
	return true
}

func (h *inHandshake) remove(c *net.TCPConn) {
	h.mu.Lock()
	delete(h.conns, c)
	h.mu.Unlock()
}

// closeAll closes every registered connection and refuses later ones.
func (h *inHandshake) closeAll() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.closed = true
	for c := range h.conns {
		c.Close()
	}
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
	hs := &inHandshake{conns: map[*net.TCPConn]struct{}{}}
	refused := &refusals{}
	var wg sync.WaitGroup
	acceptEnded := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(acceptEnded)
		t.acceptLoop(ctx, done, results, hs, refused, &wg)
	}()
	var why error
	for want > 0 && why == nil {
		select {
		case res := <-results:
			if t.peers[res.rank] != nil {
				res.conn.Close()
				refused.add(fmt.Errorf("rank %d connected twice", res.rank))
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
	hs.closeAll()
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

// acceptLoop accepts connections until the listener closes, each after taking
// a slot of the gate, and runs each one's handshake in its own goroutine
// (counted in wg): a refusal goes to refused, an admitted peer to results
// unless done is closed.
func (t *tcpTransport) acceptLoop(ctx context.Context, done <-chan struct{}, results chan<- admitted, hs *inHandshake, refused *refusals, wg *sync.WaitGroup) {
	gate := store.NewGate(store.MaxHandshakes)
	var backoff time.Duration
	for gate.Enter(done) {
		c, err := t.ln.Accept()
		if err != nil {
			gate.Leave()
			if errors.Is(err, net.ErrClosed) {
				return
			}
			// Out of file descriptors, say: peers retry nothing, so keep
			// accepting (until the listener is closed).
			backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
			time.Sleep(backoff)
			continue
		}
		backoff = 0
		conn := c.(*net.TCPConn)
		if !hs.add(conn) {
			gate.Leave()
			conn.Close()
			return
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := t.handshakeAccept(ctx, conn)
			hs.remove(conn)
			gate.Leave()
			if err != nil {
				conn.Close()
				refused.add(fmt.Errorf("refused %s: %w", conn.RemoteAddr(), err))
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
