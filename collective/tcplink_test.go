package collective

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"
	"time"
)

func pattern(n, seed int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7 + seed*13)
	}
	return b
}

// readFrame reads one frame from a raw connection, as a peer would.
func readFrame(t *testing.T, r io.Reader) (header, []byte) {
	t.Helper()
	var hb [headerMax]byte
	if _, err := io.ReadFull(r, hb[:headerFixed]); err != nil {
		t.Fatal(err)
	}
	nd := int(hb[6])
	if _, err := io.ReadFull(r, hb[headerFixed:headerFixed+8*nd]); err != nil {
		t.Fatal(err)
	}
	h, _, err := decodeHeader(hb[:headerFixed+8*nd])
	if err != nil {
		t.Fatal(err)
	}
	payload := make([]byte, h.nbytes)
	if _, err := io.ReadFull(r, payload); err != nil {
		t.Fatal(err)
	}
	return h, payload
}

// While a large send occupies the link (its peer reads nothing yet), small
// sends complete at once from eager copies, exactly up to the eager limit;
// the next one waits for the wire and times out. Everything that completed
// then reaches the peer in order, byte for byte.
func TestTCPEagerSendsWhileTheLinkIsBusy(t *testing.T) {
	c, conn := fakePeer(t, Options{Timeout: time.Minute})
	ctx := testCtx(t)
	big := pattern(64<<20, 0) // more than loopback's socket buffers take
	hBig := c.Isend(1, Tag{Kind: Activation, MicroBatch: 0}, Bytes(big))
	// An eager send is done before Isend returns; the first one past the
	// limit is queued and waits for the wire.
	const small = 1000
	var n int
	var waiting *Handle
	for waiting == nil {
		if n > 2*eagerLimit/small {
			t.Fatalf("%d small sends completed past the eager limit of %d bytes", n, eagerLimit)
		}
		h := c.Isend(1, Tag{Kind: Activation, MicroBatch: uint32(n + 1)}, Bytes(pattern(small, n+1)))
		select {
		case <-h.Done():
			if err := h.Err(); err != nil {
				t.Fatal(err)
			}
			n++
		default:
			waiting = h
		}
	}
	if want := eagerLimit / (small + headerFixed + 8); n != want {
		t.Fatalf("%d small sends completed while the link was busy; want %d (the eager limit of %d bytes in frames of %d)", n, want, eagerLimit, small+headerFixed+8)
	}
	wctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	err := waiting.Wait(wctx)
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "to rank 1") {
		t.Fatalf("send past the eager limit: %v, want a timeout naming rank 1", err)
	}
	br := bufio.NewReaderSize(conn, 1<<20)
	if h, p := readFrame(t, br); h.tag.MicroBatch != 0 || !bytes.Equal(p, big) {
		t.Fatalf("first frame mb=%d (%d bytes), want the large message intact", h.tag.MicroBatch, len(p))
	}
	if err := hBig.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		h, p := readFrame(t, br)
		if int(h.tag.MicroBatch) != i+1 || !bytes.Equal(p, pattern(small, i+1)) {
			t.Fatalf("frame %d: mb=%d, %d bytes; want mb=%d with its pattern", i+1, h.tag.MicroBatch, len(p), i+1)
		}
	}
	t.Logf("%d eager sends of %d bytes while the link was busy", n, small)
}

// Messages of every size from empty to several times the socket buffers,
// sent back to back under one tag with blocking sends while the receiver
// takes them one by one, arrive in order and intact; inline, partial, eager
// and batched writes all take part.
func TestTCPMixedSizesInOrder(t *testing.T) {
	cs := tcpWorld(t, 2, Options{})
	ctx := testCtx(t)
	rng := rand.New(rand.NewPCG(1, 2))
	sizes := make([]int, 300)
	for i := range sizes {
		switch rng.IntN(4) {
		case 0:
			sizes[i] = rng.IntN(64)
		case 1:
			sizes[i] = rng.IntN(eagerMax + 1)
		case 2:
			sizes[i] = rng.IntN(callerWriteMax + 4096)
		default:
			sizes[i] = rng.IntN(3 << 20)
		}
	}
	eachRank(t, cs, func(c Comm) error {
		tag := Tag{Kind: Activation} // one tag: only the wire order pairs them
		for i, n := range sizes {
			if c.Rank() == 0 {
				if err := c.Send(ctx, 1, tag, Bytes(pattern(n, i))); err != nil {
					return err
				}
				continue
			}
			got := make([]byte, n)
			if err := c.Recv(ctx, 0, tag, Bytes(got)); err != nil {
				return err
			}
			if !bytes.Equal(got, pattern(n, i)) {
				return fmt.Errorf("message %d (%d bytes) arrived corrupted", i, n)
			}
		}
		return nil
	})
}

// With a staging limit, a sender that runs ahead of the receives is held back
// by TCP: the reader stages what fits and then stops reading; a receive that
// times out meanwhile says so, and posting the receives in any order then
// delivers everything intact.
func TestTCPStageLimitHoldsTheSenderBack(t *testing.T) {
	const limit, size = 4 << 20, 3 << 20
	cs := tcpWorldWith(t, 2, TCPOptions{Token: testToken, StageLimit: limit})
	ctx := testCtx(t)
	tag := func(i int) Tag { return Tag{Kind: Activation, MicroBatch: uint32(i)} }
	var sends []*Handle
	for i := range 3 {
		sends = append(sends, cs[0].Isend(1, tag(i), Bytes(pattern(size, i))))
	}
	tr := cs[1].(*comm).t.(*tcpTransport)
	p := tr.peers[0]
	for deadline := time.Now().Add(30 * time.Second); !p.heldBack.Load(); runtime.Gosched() {
		if time.Now().After(deadline) {
			t.Fatal("the reader never stopped for the staging limit")
		}
	}
	if held := tr.pool.heldBytes(); held > limit {
		t.Fatalf("%d bytes staged, over the limit of %d", held, limit)
	}
	last := make([]byte, size)
	sctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	err := cs[1].Recv(sctx, 0, tag(2), Bytes(last))
	cancel()
	if err == nil || !strings.Contains(err.Error(), "reading from rank 0 is held back") {
		t.Fatalf("receive behind a held-back link: %v, want a timeout that says the link is held back", err)
	}
	for _, i := range []int{1, 2, 0} {
		got := make([]byte, size)
		if err := cs[1].Recv(ctx, 0, tag(i), Bytes(got)); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, pattern(size, i)) {
			t.Fatalf("message %d arrived corrupted", i)
		}
		if held := tr.pool.heldBytes(); held > limit {
			t.Fatalf("%d bytes staged, over the limit of %d", held, limit)
		}
	}
	if err := waitAll(ctx, sends); err != nil {
		t.Fatal(err)
	}
}

// Small messages on a polling link (Poll: 1) arrive intact whichever comes
// first: those for another tag are staged on the way and handed over later,
// larger ones among them are read in place, a shape mismatch fails only its
// own receive, and round trips of every size up to 16 KiB arrive intact.
func TestTCPSmallMessagesStagedAndInPlace(t *testing.T) {
	const small = 16 << 10
	cs := tcpWorldWith(t, 2, TCPOptions{Token: testToken, Poll: 1})
	ctx := testCtx(t)
	rng := rand.New(rand.NewPCG(3, 4))
	const pairs = 400
	sizes := make([][2]int, pairs)
	for i := range sizes {
		for j := range 2 {
			switch rng.IntN(8) {
			case 0:
				sizes[i][j] = small + rng.IntN(256<<10)
			default:
				sizes[i][j] = rng.IntN(small + 1)
			}
		}
	}
	const wrongShape = 123 // the pair whose second message rank 1 expects in another shape
	a := func(i int) Tag { return Tag{Kind: Activation, MicroBatch: uint32(i)} }
	b := func(i int) Tag { return Tag{Kind: Gradient, MicroBatch: uint32(i)} }
	eachRank(t, cs, func(c Comm) error {
		if c.Rank() == 0 {
			for i, s := range sizes {
				if err := c.Send(ctx, 1, a(i), Bytes(pattern(s[0], i))); err != nil {
					return err
				}
				if i == wrongShape {
					if err := c.Send(ctx, 1, b(i), F32(make([]float32, 4), 2, 2)); err != nil {
						return err
					}
					continue
				}
				if err := c.Send(ctx, 1, b(i), Bytes(pattern(s[1], -i))); err != nil {
					return err
				}
			}
			return nil
		}
		// Each B is received before the A sent ahead of it, so A is staged.
		for i, s := range sizes {
			if i == wrongShape {
				err := c.Recv(ctx, 0, b(i), F32(make([]float32, 4)))
				if err == nil || !strings.Contains(err.Error(), "[4] but rank 0 sent float32[2 2]") {
					return fmt.Errorf("receive of the wrong shape: %v, want an error naming both shapes", err)
				}
			} else {
				got := make([]byte, s[1])
				if err := c.Recv(ctx, 0, b(i), Bytes(got)); err != nil {
					return err
				}
				if !bytes.Equal(got, pattern(s[1], -i)) {
					return fmt.Errorf("pair %d: second message (%d bytes) arrived corrupted", i, s[1])
				}
			}
			got := make([]byte, s[0])
			if err := c.Recv(ctx, 0, a(i), Bytes(got)); err != nil {
				return err
			}
			if !bytes.Equal(got, pattern(s[0], i)) {
				return fmt.Errorf("pair %d: first message (%d bytes) arrived corrupted", i, s[0])
			}
		}
		return nil
	})
	eachRank(t, cs, func(c Comm) error {
		peer := 1 - c.Rank()
		for i := range 2000 {
			n := i % (small + 1)
			if i%2 == 0 {
				n = i % 64
			}
			msg := make([]byte, n)
			if c.Rank() == 0 {
				if err := c.Send(ctx, peer, a(i), Bytes(pattern(n, i))); err != nil {
					return err
				}
			}
			if err := c.Recv(ctx, peer, a(i), Bytes(msg)); err != nil {
				return err
			}
			if !bytes.Equal(msg, pattern(n, i)) {
				return fmt.Errorf("round trip %d (%d bytes) arrived corrupted", i, n)
			}
			if c.Rank() == 1 {
				if err := c.Send(ctx, peer, a(i), Bytes(msg)); err != nil {
					return err
				}
			}
		}
		return nil
	})
}

// Blocking Send and Recv of small messages reuse their handles: a send to
// an idle link and a receive of a message that has arrived leave nothing for
// the garbage collector but the record of the staged message (one object),
// and a receive posted first (Irecv) costs its handle and at most the channel
// of a Wait that parked.
//
// The counts cannot depend on scheduling. One goroutine drives both ranks,
// one message at a time: each Send finds its link idle (the previous frame
// went out whole and nothing is queued), so it writes inline and is done
// before it returns; the test then waits, by looking at the peer's mailbox,
// until the reader goroutine has staged the whole message, so that the Recv
// completes inside its post and its Wait never parks. The reader is the only
// other goroutine at work, and it allocates exactly one record per staged
// message (the staging buffer is reused). With the receive posted first, the
// frame cannot arrive before it, and only whether Wait parks varies: one
// channel, counted in the bound. The average per message is taken with
// integer division over 500 messages, as testing.AllocsPerRun does, so a
// stray allocation by the runtime (a pooled handle dropped at a GC) cannot
// raise it.
func TestTCPRoundTripsAllocateAlmostNothing(t *testing.T) {
	if raceEnabled {
		t.Skip("-race: sync.Pool drops pooled handles at random, so allocation counts do not hold")
	}
	cs := tcpWorld(t, 2, Options{})
	ctx := testCtx(t)
	tag := Tag{Kind: Activation}
	out, in := Bytes(make([]byte, 8)), Bytes(make([]byte, 8))
	ways := []struct {
		name string
		most uint64 // allocations per message
		xfer func(from, to int) error
	}{
		{"message first", 1, func(from, to int) error {
			if err := cs[from].Send(ctx, to, tag, out); err != nil {
				return err
			}
			awaitStaged(cs[to], from)
			return cs[to].Recv(ctx, from, tag, in)
		}},
		{"receive posted first", 2, func(from, to int) error {
			h := cs[to].Irecv(from, tag, in)
			if err := cs[from].Send(ctx, to, tag, out); err != nil {
				return err
			}
			return h.Wait(ctx)
		}},
	}
	for _, w := range ways {
		const n = 500
		roundTrips := func(k int) {
			for range k {
				if err := w.xfer(0, 1); err != nil {
					t.Fatal(err)
				}
				if err := w.xfer(1, 0); err != nil {
					t.Fatal(err)
				}
			}
		}
		roundTrips(50) // warm up: pooled handles and staging buffers, slices at their size
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		roundTrips(n / 2)
		runtime.ReadMemStats(&after)
		per := (after.Mallocs - before.Mallocs) / n
		if per > w.most {
			t.Errorf("%s: %d messages of 8 bytes allocated %d objects, %d a message; want at most %d", w.name, n, after.Mallocs-before.Mallocs, per, w.most)
		}
		t.Logf("%s: %d messages of 8 bytes allocated %d objects", w.name, n, after.Mallocs-before.Mallocs)
	}
}

// awaitStaged returns once c holds a whole message from peer that no receive
// has taken, yielding to the reader goroutine meanwhile.
func awaitStaged(c Comm, peer int) {
	box := &c.(*comm).t.(*tcpTransport).peers[peer].box
	for {
		box.mu.Lock()
		ready := len(box.unexpected) > 0 && box.unexpected[0].complete
		box.mu.Unlock()
		if ready {
			return
		}
		runtime.Gosched()
	}
}
