package collective

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestChunkBounds(t *testing.T) {
	cases := []struct {
		n, parts int
		want     [][2]int
	}{
		{10, 3, [][2]int{{0, 4}, {4, 7}, {7, 10}}},
		{2, 4, [][2]int{{0, 1}, {1, 2}, {2, 2}, {2, 2}}},
		{8, 4, [][2]int{{0, 2}, {2, 4}, {4, 6}, {6, 8}}},
		{0, 2, [][2]int{{0, 0}, {0, 0}}},
	}
	for _, tc := range cases {
		for c, w := range tc.want {
			lo, hi := ChunkBounds(tc.n, tc.parts, c)
			if lo != w[0] || hi != w[1] {
				t.Errorf("ChunkBounds(%d,%d,%d) = [%d,%d), want [%d,%d)", tc.n, tc.parts, c, lo, hi, w[0], w[1])
			}
		}
	}
}

// reference reduces inputs element by element in the documented fixed order.
func reference[T float](inputs [][]T, op ReduceOp) []T {
	n, N := len(inputs), len(inputs[0])
	out := make([]T, N)
	for c := range n {
		lo, hi := ChunkBounds(N, n, c)
		for i := lo; i < hi; i++ {
			acc := inputs[(c+1)%n][i]
			for k := 2; k <= n; k++ {
				v := inputs[(c+k)%n][i]
				switch op {
				case Max:
					if v != v || v > acc {
						acc = v
					}
				default:
					acc = acc + v
				}
			}
			if op == Avg {
				acc /= T(n)
			}
			out[i] = acc
		}
	}
	return out
}

// All-reduce results are exactly the fixed-order reduction, bit for bit, on
// every rank, for float64 and float32, for sizes from 1 to past world·k+r
// (including sizes below the world size), on both the direct path and the
// segmented ring.
func TestAllReduceExact(t *testing.T) {
	paths := map[string]Options{
		"default": {},
		"ring":    {SmallBytes: 16, SegmentBytes: 96}, // force the ring with several segments
	}
	forEach(t, allSizes, func(t *testing.T, b backend, n int) {
		for pname, opts := range paths {
			cs := b.world(t, n, opts)
			ctx := testCtx(t)
			rng := rand.New(rand.NewPCG(uint64(n), 7))
			sizes := []int{1, n - 1, n, n + 1, 3*n + 2, rng.IntN(5*n+4) + 1, 257}
			if pname == "default" {
				sizes = append(sizes, 20000) // over SmallBytes: the ring with real segments
			}
			for _, N := range sizes {
				if N < 1 {
					continue
				}
				for _, op := range []ReduceOp{Sum, Avg, Max} {
					checkAllReduce(t, ctx, cs, rng, N, op)
				}
			}
		}
	})
}

func randomInputs[T float](rng *rand.Rand, n, N int) [][]T {
	in := make([][]T, n)
	for r := range in {
		in[r] = make([]T, N)
		for i := range in[r] {
			// Mixed magnitudes, so that the summation order shows in the bits.
			in[r][i] = T(rng.NormFloat64() * math.Pow(10, float64(rng.IntN(8)-4)))
		}
	}
	return in
}

func checkAllReduce(t *testing.T, ctx context.Context, cs []Comm, rng *rand.Rand, N int, op ReduceOp) {
	t.Helper()
	n := len(cs)
	in64 := randomInputs[float64](rng, n, N)
	in32 := randomInputs[float32](rng, n, N)
	want64, want32 := reference(in64, op), reference(in32, op)
	got64, got32 := make([][]float64, n), make([][]float32, n)
	eachRank(t, cs, func(c Comm) error {
		r := c.Rank()
		got64[r], got32[r] = append([]float64(nil), in64[r]...), append([]float32(nil), in32[r]...)
		if err := c.AllReduce(ctx, F64(got64[r]), op); err != nil {
			return err
		}
		return c.AllReduce(ctx, F32(got32[r]), op)
	})
	for r := range n {
		for i := range N {
			if math.Float64bits(got64[r][i]) != math.Float64bits(want64[i]) {
				t.Fatalf("n=%d N=%d %s float64: rank %d element %d = %v, want %v", n, N, op, r, i, got64[r][i], want64[i])
			}
			if math.Float32bits(got32[r][i]) != math.Float32bits(want32[i]) {
				t.Fatalf("n=%d N=%d %s float32: rank %d element %d = %v, want %v", n, N, op, r, i, got32[r][i], want32[i])
			}
		}
	}
}

func TestAllReduceMaxPropagatesNaN(t *testing.T) {
	for _, b := range backends {
		cs := b.world(t, 3, Options{})
		ctx := testCtx(t)
		eachRank(t, cs, func(c Comm) error {
			x := []float64{float64(c.Rank()), 1}
			if c.Rank() == 1 {
				x[1] = math.NaN()
			}
			if err := c.AllReduce(ctx, F64(x), Max); err != nil {
				return err
			}
			if x[0] != 2 || !math.IsNaN(x[1]) {
				return fmt.Errorf("max = %v, want [2 NaN]", x)
			}
			return nil
		})
	}
}

// An all-reduce that a rank never joins fails at the deadline with an error
// that names, as an OpError, the rank it waited on: the piece of the
// collective that timed out, as a stage loop's receive does, so the launcher
// can blame the silent rank. On the direct path and on the ring.
func TestAllReduceTimeoutNamesPeer(t *testing.T) {
	for _, b := range backends {
		for _, opts := range []Options{{}, {SmallBytes: 8, SegmentBytes: 40}} {
			t.Run(fmt.Sprintf("%s/small-%d", b.name, opts.SmallBytes), func(t *testing.T) {
				cs := b.world(t, 2, opts)
				// Rank 1 never calls: any deadline expires; its length is not asserted.
				ctx, cancel := context.WithTimeout(testCtx(t), 20*time.Millisecond)
				defer cancel()
				err := cs[0].AllReduce(ctx, F64(make([]float64, 64)), Sum)
				var oe *OpError
				if !errors.As(err, &oe) || oe.Peer != 1 || !errors.Is(err, context.DeadlineExceeded) {
					t.Fatalf("all-reduce without rank 1: %v; want an OpError with Peer 1 and a deadline exceeded", err)
				}
				if want := "from rank 1: timeout after"; !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not say %q", err, want)
				}
			})
		}
	}
}

func TestBroadcast(t *testing.T) {
	forEach(t, allSizes, func(t *testing.T, b backend, n int) {
		for _, opts := range []Options{{}, {SmallBytes: 8, SegmentBytes: 40}} {
			cs := b.world(t, n, opts)
			ctx := testCtx(t)
			for root := range n {
				for _, N := range []int{0, 1, 5, 300} {
					eachRank(t, cs, func(c Comm) error {
						x := make([]float64, N)
						y := make([]byte, N)
						for i := range x {
							if c.Rank() == root {
								x[i], y[i] = float64(root*1000+i), byte(root+i)
							}
						}
						if err := c.Broadcast(ctx, F64(x), root); err != nil {
							return err
						}
						if err := c.Broadcast(ctx, Bytes(y), root); err != nil {
							return err
						}
						for i := range x {
							if x[i] != float64(root*1000+i) || y[i] != byte(root+i) {
								return fmt.Errorf("root %d N %d: element %d = %v/%v", root, N, i, x[i], y[i])
							}
						}
						return nil
					})
				}
			}
		}
	})
}

// No rank leaves a barrier before every rank has entered it.
func TestBarrier(t *testing.T) {
	forEach(t, allSizes, func(t *testing.T, b backend, n int) {
		cs := b.world(t, n, Options{})
		ctx := testCtx(t)
		var entered atomic.Int64
		eachRank(t, cs, func(c Comm) error {
			for round := range 5 {
				entered.Add(1)
				if err := c.Barrier(ctx); err != nil {
					return err
				}
				if got := entered.Load(); got < int64(n*(round+1)) {
					return fmt.Errorf("round %d: left the barrier after only %d of %d entries", round, got, n*(round+1))
				}
			}
			return nil
		})
	})
}

// Sub-groups of an 8-rank world: two pipeline groups of 4, four data-parallel
// pairs and the first/last-stage pair, used at the same time with the same
// tags; messages never cross groups.
func TestGroups(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			cs := b.world(t, 8, Options{SmallBytes: 16, SegmentBytes: 16})
			ctx := testCtx(t)
			eachRank(t, cs, func(c Comm) error {
				r := c.Rank()
				pipeRanks := []int{r / 4 * 4, r/4*4 + 1, r/4*4 + 2, r/4*4 + 3}
				pipe, err := c.Group(pipeRanks)
				if err != nil {
					return err
				}
				dp, err := c.Group([]int{r % 4, r%4 + 4})
				if err != nil {
					return err
				}
				if pipe.Rank() != r%4 || pipe.Size() != 4 || dp.Rank() != r/4 || dp.WorldRank(dp.Rank()) != r {
					return fmt.Errorf("group ranks: pipe %d/%d dp %d", pipe.Rank(), pipe.Size(), dp.Rank())
				}
				tag := Tag{Kind: Activation, Step: 1}
				// Pipeline: stage s sends to s+1 on the same tag as the world send below.
				var hs []*Handle
				if s := pipe.Rank(); s < 3 {
					hs = append(hs, pipe.Isend(s+1, tag, F32([]float32{float32(100 + r)})))
				}
				hs = append(hs, c.Isend((r+1)%8, tag, F32([]float32{float32(200 + r)})))
				g := []float64{float64(r), float64(r * r)}
				if err := dp.AllReduce(ctx, F64(g), Sum); err != nil {
					return err
				}
				if want := float64(r%4 + r%4 + 4); g[0] != want {
					return fmt.Errorf("dp all-reduce = %v, want %v", g[0], want)
				}
				if s := pipe.Rank(); s > 0 {
					x := make([]float32, 1)
					if err := pipe.Recv(ctx, s-1, tag, F32(x)); err != nil {
						return err
					}
					if x[0] != float32(100+r-1) {
						return fmt.Errorf("pipeline recv got %v", x[0])
					}
				}
				x := make([]float32, 1)
				if err := c.Recv(ctx, (r+7)%8, tag, F32(x)); err != nil {
					return err
				}
				if x[0] != float32(200+(r+7)%8) {
					return fmt.Errorf("world recv got %v", x[0])
				}
				if r%4 == 0 || r%4 == 3 { // first and last stage share tied embeddings
					ends, err := pipe.Group([]int{0, 3})
					if err != nil {
						return err
					}
					e := []float32{float32(r)}
					if err := ends.AllReduce(ctx, F32(e), Max); err != nil {
						return err
					}
					if e[0] != float32(r/4*4+3) {
						return fmt.Errorf("ends max = %v", e[0])
					}
				}
				return waitAll(ctx, hs)
			})
		})
	}
}

// BenchmarkReduceFrom is the ring's per-segment arithmetic (4 MiB of float32).
func BenchmarkReduceFrom(b *testing.B) {
	own, p := make([]float32, 1<<20), make([]float32, 1<<20)
	b.SetBytes(4 << 20)
	for b.Loop() {
		reduceFrom(own, p, Sum)
	}
}
