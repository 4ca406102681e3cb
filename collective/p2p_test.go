package collective

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// Every rank sends a numbered stream on two tags to every rank (itself
// included); receivers take the second tag's stream first, then the first's,
// and must see each stream in order.
func TestOrderedDeliveryPerPeerAndTag(t *testing.T) {
	const msgs = 12
	forEach(t, allSizes, func(t *testing.T, b backend, n int) {
		cs := b.world(t, n, Options{})
		ctx := testCtx(t)
		tagA := Tag{Kind: Activation, Step: 7, MicroBatch: 1}
		tagB := Tag{Kind: Gradient, Step: 7, MicroBatch: 1}
		eachRank(t, cs, func(c Comm) error {
			var hs []*Handle
			for peer := range n {
				for i := range msgs {
					for _, tag := range []Tag{tagA, tagB} {
						v := float32(1000*c.Rank() + 10*i + int(tag.Kind))
						hs = append(hs, c.Isend(peer, tag, F32([]float32{v, v})))
					}
				}
			}
			for peer := range n {
				for _, tag := range []Tag{tagB, tagA} {
					for i := range msgs {
						got := make([]float32, 2)
						if err := c.Recv(ctx, peer, tag, F32(got)); err != nil {
							return err
						}
						want := float32(1000*peer + 10*i + int(tag.Kind))
						if got[0] != want || got[1] != want {
							return fmt.Errorf("message %d on %s from rank %d: got %v, want %v", i, tag, peer, got, want)
						}
					}
				}
			}
			return waitAll(ctx, hs)
		})
	})
}

// Every rank keeps many non-blocking sends and receives in flight with every
// peer at once, in both directions, with payloads large enough to fill socket
// buffers; half the receives are posted before the sends, half after.
func TestManyOutstandingBothWays(t *testing.T) {
	forEach(t, allSizes, func(t *testing.T, b backend, n int) {
		cs := b.world(t, n, Options{})
		ctx := testCtx(t)
		sizes := []int{1, 3, 1 << 17, 5, 1 << 15, 0, 2}
		fill := func(from, to, i int, x []float32) {
			for j := range x {
				x[j] = float32(from*7 + to*131 + i*17 + j%1000)
			}
		}
		eachRank(t, cs, func(c Comm) error {
			r := c.Rank()
			recvBufs := map[[2]int][]float32{}
			var recvs []*Handle
			post := func(half int) {
				for peer := range n {
					for i, sz := range sizes {
						if i%2 != half {
							continue
						}
						buf := make([]float32, sz)
						recvBufs[[2]int{peer, i}] = buf
						recvs = append(recvs, c.Irecv(peer, Tag{Kind: Data, MicroBatch: uint32(i)}, F32(buf)))
					}
				}
			}
			post(0)
			var sends []*Handle
			for peer := range n {
				for i, sz := range sizes {
					x := make([]float32, sz)
					fill(r, peer, i, x)
					sends = append(sends, c.Isend(peer, Tag{Kind: Data, MicroBatch: uint32(i)}, F32(x)))
				}
			}
			post(1)
			if err := waitAll(ctx, append(recvs, sends...)); err != nil {
				return err
			}
			for k, got := range recvBufs {
				want := make([]float32, len(got))
				fill(k[0], r, k[1], want)
				for j := range got {
					if got[j] != want[j] {
						return fmt.Errorf("message %d from rank %d: element %d = %v, want %v", k[1], k[0], j, got[j], want[j])
					}
				}
			}
			return nil
		})
	})
}

// A send and a receive with the same peer issued as one Batch, round after
// round in a ring and between pairs, as in a 1F1B steady state.
func TestBatchSendRecvSteadyState(t *testing.T) {
	forEach(t, []int{2, 3, 5}, func(t *testing.T, b backend, n int) {
		cs := b.world(t, n, Options{})
		ctx := testCtx(t)
		const elems = 1 << 19 // 2 MiB each way
		eachRank(t, cs, func(c Comm) error {
			r := c.Rank()
			next, prev := (r+1)%n, (r+n-1)%n
			out, in := make([]float32, elems), make([]float32, elems)
			for step := range 4 {
				for j := range out {
					out[j] = float32(r*1000 + step)
				}
				fwd := Tag{Kind: Activation, Step: uint32(step)}
				bwd := Tag{Kind: Gradient, Step: uint32(step)}
				// Forward to next, receive from prev; then both ways with next.
				if err := c.Batch(SendOp(next, fwd, F32(out)), RecvOp(prev, fwd, F32(in))).Wait(ctx); err != nil {
					return err
				}
				if in[0] != float32(prev*1000+step) || in[elems-1] != in[0] {
					return fmt.Errorf("step %d: got %v from rank %d", step, in[0], prev)
				}
				back := make([]float32, elems)
				if err := c.Batch(SendOp(prev, bwd, F32(in)), RecvOp(next, bwd, F32(back))).Wait(ctx); err != nil {
					return err
				}
				if back[0] != out[0] {
					return fmt.Errorf("step %d: gradient from rank %d is %v, want %v", step, next, back[0], out[0])
				}
			}
			return nil
		})
	})
}

// A message whose shape or dtype is not what the receiver expects fails the
// receive with an error naming both ranks and both shapes, whether the receive
// was posted before or after the message arrived; the link stays usable.
func TestShapeAndDTypeMismatch(t *testing.T) {
	for _, b := range backends {
		for _, early := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/posted-before=%v", b.name, early), func(t *testing.T) {
				cs := b.world(t, 2, Options{})
				ctx := testCtx(t)
				tag := Tag{Kind: Activation, Step: 2, MicroBatch: 3}
				cases := []struct {
					sent, want Buffer
					msg        string
				}{
					{F32(make([]float32, 6), 2, 3), F32(make([]float32, 6), 3, 2), "rank 1 expected float32[3 2] but rank 0 sent float32[2 3]"},
					{F64(make([]float64, 4)), F32(make([]float32, 4)), "rank 1 expected float32[4] but rank 0 sent float64[4]"},
					{BF16(make([]uint16, 4)), F32(make([]float32, 4)), "rank 1 expected float32[4] but rank 0 sent bfloat16[4]"},
					{F32(make([]float32, 1<<18)), F32(make([]float32, 1<<18+1)), "rank 1 expected float32[262145] but rank 0 sent float32[262144]"},
				}
				for _, tc := range cases {
					var err error
					eachRank(t, cs, func(c Comm) error {
						if c.Rank() == 0 {
							if err := c.Send(ctx, 1, tag, tc.sent); err != nil {
								return err
							}
							return c.Barrier(ctx)
						}
						if early {
							h := c.Irecv(0, tag, tc.want)
							if err := c.Barrier(ctx); err != nil {
								return err
							}
							err = h.Wait(ctx)
						} else {
							if err := c.Barrier(ctx); err != nil {
								return err
							}
							err = c.Recv(ctx, 0, tag, tc.want)
						}
						return nil
					})
					if err == nil || !strings.Contains(err.Error(), tc.msg) || !strings.Contains(err.Error(), "recv activation chunk=0 step=2 mb=3 from rank 0") {
						t.Errorf("mismatch error = %v, want it to contain %q", err, tc.msg)
					}
				}
				// The link still carries the next message correctly.
				eachRank(t, cs, func(c Comm) error {
					if c.Rank() == 0 {
						return c.Send(ctx, 1, tag, F32([]float32{42}))
					}
					got := make([]float32, 1)
					if err := c.Recv(ctx, 0, tag, F32(got)); err != nil {
						return err
					}
					if got[0] != 42 {
						return fmt.Errorf("after mismatches got %v, want 42", got[0])
					}
					return nil
				})
			})
		}
	}
}

// TestBFloat16Messages: bfloat16 payloads arrive bit for bit, two bytes an
// element, whole and cut into segments.
func TestBFloat16Messages(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			cs := b.world(t, 2, Options{})
			ctx := testCtx(t)
			for _, n := range []int{0, 3, 1<<18 + 7} {
				sent := make([]uint16, n)
				for i := range sent {
					sent[i] = uint16(i*2654435761>>7) | 1
				}
				got := make([]uint16, n)
				eachRank(t, cs, func(c Comm) error {
					tag := Tag{Kind: Activation, MicroBatch: uint32(n)}
					if c.Rank() == 0 {
						return c.Send(ctx, 1, tag, BF16(sent, 1, n))
					}
					return c.Recv(ctx, 0, tag, BF16(got, 1, n))
				})
				if !slices.Equal(got, sent) {
					t.Fatalf("%d bfloat16 values: received values differ from those sent", n)
				}
			}
			if h := BF16(make([]uint16, 6), 2, 3); h.Len() != 6 || len(h.bytes()) != 12 {
				t.Fatalf("bfloat16 buffer of 6: Len %d, %d bytes, want 6 and 12", h.Len(), len(h.bytes()))
			}
		})
	}
}

// A receive nobody answers fails at its deadline with an error that says what
// it was waiting for, and is withdrawn: the message sent later is not lost.
func TestDeadlineHonoured(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			cs := b.world(t, 2, Options{Timeout: 20 * time.Millisecond})
			ctx := testCtx(t)
			tag := Tag{Kind: Activation, Step: 1, MicroBatch: 3}
			short, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
			defer cancel()
			err := cs[0].Recv(short, 1, tag, F32(make([]float32, 4)))
			if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "recv activation chunk=0 step=1 mb=3 from rank 1: timeout after") {
				t.Fatalf("recv error = %v, want a timeout naming the receive", err)
			}
			// With no deadline on the context, the communicator's default applies.
			err = cs[0].Recv(context.Background(), 1, tag, F32(make([]float32, 4)))
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("recv with default timeout: %v, want deadline exceeded", err)
			}
			eachRank(t, cs, func(c Comm) error {
				if c.Rank() == 1 {
					return c.Send(ctx, 0, tag, F32([]float32{1, 2, 3, 4}))
				}
				got := make([]float32, 4)
				if err := c.Recv(ctx, 1, tag, F32(got)); err != nil {
					return err
				}
				if got[3] != 4 {
					return fmt.Errorf("got %v after timeouts", got)
				}
				return nil
			})
		})
	}
}

// A rank that aborts or closes makes its peers' waiting receives fail at once
// with an error naming it, long before their deadline.
func TestPeerGoneFailsWaitersNamingIt(t *testing.T) {
	for _, b := range backends {
		for _, how := range []string{"abort", "close"} {
			t.Run(b.name+"/"+how, func(t *testing.T) {
				cs := b.world(t, 3, Options{})
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				defer cancel()
				// Rank 1 is mid-way through a large message from rank 2 when
				// rank 2 goes; rank 0 waits on rank 2 too.
				started := make(chan struct{})
				var wg sync.WaitGroup
				errs := make([]error, 2)
				for _, r := range []int{0, 1} {
					wg.Go(func() {
						h := cs[r].Irecv(2, Tag{Kind: Activation}, F32(make([]float32, 1<<20)))
						if r == 1 {
							close(started)
						}
						errs[r] = h.Wait(ctx)
					})
				}
				<-started
				// Rank 2 has a large message to rank 1 on the wire as it goes.
				cs[2].Isend(1, Tag{Kind: Gradient}, F32(make([]float32, 8<<20)))
				if how == "abort" {
					cs[2].Abort(errors.New("killed by test"))
				} else {
					cs[2].Close()
				}
				wg.Wait()
				for r, err := range errs {
					if err == nil || !strings.Contains(err.Error(), "from rank 2") || errors.Is(err, context.DeadlineExceeded) {
						t.Errorf("rank %d: %v, want an error naming rank 2 (not a timeout)", r, err)
					}
					if how == "close" && !strings.Contains(err.Error(), "rank 2 closed its communicator") {
						t.Errorf("rank %d: %v, want it to say rank 2 closed", r, err)
					}
				}
				// Sends to the gone rank fail too, naming it.
				if err := cs[0].Send(ctx, 2, Tag{}, F32(make([]float32, 1<<20))); err == nil || !strings.Contains(err.Error(), "rank 2") {
					t.Errorf("send to gone rank: %v, want it to name rank 2", err)
				}
			})
		}
	}
}

// Abort wakes every waiter of the aborting rank with the reason, and every
// later call fails at once.
func TestAbortWakesEveryWaiter(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			cs := b.world(t, 3, Options{})
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			c := cs[0]
			hs := []*Handle{
				c.Irecv(1, Tag{Kind: Activation}, F32(make([]float32, 8))),
				c.Irecv(2, Tag{Kind: Gradient}, F64(make([]float64, 8))),
				c.Irecv(0, Tag{Kind: Data}, F32(make([]float32, 8))), // from itself
			}
			errs := make(chan error, 2)
			go func() { errs <- c.Recv(ctx, 1, Tag{Kind: Control}, Bytes(make([]byte, 3))) }()
			go func() { errs <- c.AllReduce(ctx, F32(make([]float32, 1<<16)), Sum) }()
			c.Abort(errors.New("boom"))
			for _, h := range hs {
				if err := h.Wait(ctx); !errors.Is(err, ErrAborted) || !strings.Contains(err.Error(), "boom") {
					t.Errorf("handle: %v, want it aborted with boom", err)
				}
			}
			for range 2 {
				if err := <-errs; !errors.Is(err, ErrAborted) {
					t.Errorf("blocked call: %v, want ErrAborted", err)
				}
			}
			if err := c.Send(ctx, 1, Tag{}, F32(nil)); !errors.Is(err, ErrAborted) {
				t.Errorf("send after abort: %v", err)
			}
		})
	}
}

func TestBadArguments(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			cs := b.world(t, 2, Options{})
			ctx := testCtx(t)
			c := cs[0]
			cases := []struct {
				err  error
				want string
			}{
				{c.Send(ctx, 2, Tag{}, F32(nil)), "peer 2 out of range [0,2)"},
				{c.Send(ctx, -1, Tag{}, F32(nil)), "peer -1 out of range"},
				{c.Send(ctx, 1, Tag{Kind: KindReserved}, F32(nil)), "reserved"},
				{c.Send(ctx, 1, Tag{}, F32(make([]float32, 5), 2, 2)), "shape [2 2] holds 4 elements but its float32 data has 5"},
				{c.Recv(ctx, 1, Tag{}, Buffer{DType: 9}), "unknown dtype"},
				{c.AllReduce(ctx, Bytes([]byte{1}), Sum), "not float32 or float64"},
				{c.Broadcast(ctx, F32(nil), 5), "out of range"},
			}
			for i, tc := range cases {
				if tc.err == nil || !strings.Contains(tc.err.Error(), tc.want) {
					t.Errorf("case %d: %v, want %q", i, tc.err, tc.want)
				}
			}
			if _, err := c.Group([]int{1}); err == nil || !strings.Contains(err.Error(), "does not include") {
				t.Errorf("group without self: %v", err)
			}
			if _, err := c.Group([]int{0, 0}); err == nil || !strings.Contains(err.Error(), "repeated") {
				t.Errorf("group with a repeat: %v", err)
			}
		})
	}
}

// In worlds of 2..8 ranks, every rank at once: a mismatched message from its
// predecessor, a receive from its successor that times out, and then a wait
// on the last rank, which aborts. Each error names the right peers.
func TestFailuresInEveryWorldSize(t *testing.T) {
	forEach(t, allSizes[1:], func(t *testing.T, b backend, n int) {
		cs := b.world(t, n, Options{})
		ctx := testCtx(t)
		tag := Tag{Kind: Gradient, Step: 4, MicroBatch: 1}
		eachRank(t, cs, func(c Comm) error {
			r := c.Rank()
			next, prev := (r+1)%n, (r+n-1)%n
			if err := c.Send(ctx, next, tag, F32(make([]float32, 6), 2, 3)); err != nil {
				return err
			}
			err := c.Recv(ctx, prev, tag, F32(make([]float32, 6), 3, 2))
			want := fmt.Sprintf("recv gradient chunk=0 step=4 mb=1 from rank %d: rank %d expected float32[3 2] but rank %d sent float32[2 3]", prev, r, prev)
			if err == nil || !strings.Contains(err.Error(), want) {
				return fmt.Errorf("mismatch: %v, want %q", err, want)
			}
			short, cancel := context.WithTimeout(ctx, 10*time.Millisecond)
			defer cancel()
			err = c.Recv(short, next, Tag{Kind: Activation, Step: 9}, F32(make([]float32, 1)))
			want = fmt.Sprintf("recv activation chunk=0 step=9 mb=0 from rank %d: timeout after", next)
			if err == nil || !strings.Contains(err.Error(), want) {
				return fmt.Errorf("timeout: %v, want %q", err, want)
			}
			if err := c.Barrier(ctx); err != nil {
				return err
			}
			if r == n-1 {
				c.Abort(errors.New("last rank quits"))
				return nil
			}
			err = c.Recv(ctx, n-1, Tag{Kind: Activation}, F32(make([]float32, 1)))
			if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("from rank %d: rank %d", n-1, n-1)) || errors.Is(err, context.DeadlineExceeded) {
				return fmt.Errorf("waiting on the aborted rank: %v", err)
			}
			return nil
		})
	})
}
