package bench

import (
	"context"
	"net"
	"sync"
	"testing"

	"github.com/pplaunch/pplaunch/collective"
)

// BenchmarkComm measures, in one run, the TCP backend between goroutine ranks
// over loopback against a plain Go socket pair between the same ranks (the
// ceiling): p2p one-way bandwidth at 16 MiB and 256 MiB, 8-byte latency
// (half a ping-pong), and a 16 MiB float32 all-reduce on 4 ranks, whose bus
// bandwidth is compared to the p2p ceiling.
//
//	go test -run '^$' -bench Comm -benchtime 1x ./bench/
func BenchmarkComm(b *testing.B) {
	ctx := context.Background()
	p2p := func(b *testing.B, size int64, iters int, latency bool) {
		cs := tcpWorld(b, 2)
		raws := pair(b, cs)
		for b.Loop() {
			var res Result
			eachRank(b, cs, func(c collective.Comm) error {
				r, err := MeasureP2P(ctx, c, raws[c.Rank()], size, iters, 3, latency)
				if c.Rank() == 0 {
					res = r
				}
				return err
			})
			if latency {
				b.ReportMetric(res.LatencyUS, "us/lat")
				b.ReportMetric(res.CeilingLatUS, "us/ceiling-lat")
				b.ReportMetric(res.LatRatio, "lat-ratio")
			} else {
				b.ReportMetric(res.AlgBW, "GB/s")
				b.ReportMetric(res.CeilingBW, "GB/s-ceiling")
				b.ReportMetric(res.Ratio, "ratio")
			}
		}
	}
	b.Run("p2p/16MiB", func(b *testing.B) { p2p(b, 16<<20, 32, false) })
	b.Run("p2p/256MiB", func(b *testing.B) { p2p(b, 256<<20, 4, false) })
	b.Run("p2p/8B", func(b *testing.B) { p2p(b, 8, 1000, true) })
	b.Run("allreduce/4ranks/16MiB", func(b *testing.B) {
		cs := tcpWorld(b, 4)
		raws := pair(b, cs)
		for b.Loop() {
			var res Result
			eachRank(b, cs, func(c collective.Comm) error {
				r, err := MeasureAllReduce(ctx, c, Host, raws[c.Rank()], 16<<20, 16, 3)
				if c.Rank() == 0 {
					res = r
				}
				return err
			})
			b.ReportMetric(res.Seconds*1e3, "ms/allreduce")
			b.ReportMetric(res.BusBW, "GB/s-bus")
			b.ReportMetric(res.CeilingBW, "GB/s-ceiling")
			b.ReportMetric(res.Ratio, "ratio")
			if res.Wrong != 0 {
				b.Fatalf("%d wrong elements", res.Wrong)
			}
		}
	})
}

// BenchmarkSendRecv16MiB is the steady state of one link: its B/op and
// allocs/op show that no payload-sized buffer is allocated per message.
//
//	go test -run '^$' -bench SendRecv -benchmem ./bench/
func BenchmarkSendRecv16MiB(b *testing.B) {
	cs := tcpWorld(b, 2)
	ctx := context.Background()
	out, in := make([]float32, 4<<20), make([]float32, 4<<20)
	b.SetBytes(16 << 20)
	b.ReportAllocs()
	n := b.N
	done := make(chan error)
	b.ResetTimer()
	go func() {
		for range n {
			if err := cs[1].Recv(ctx, 0, tagData, collective.F32(in)); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	for range n {
		if err := cs[0].Send(ctx, 1, tagData, collective.F32(out)); err != nil {
			b.Fatal(err)
		}
	}
	if err := <-done; err != nil {
		b.Fatal(err)
	}
}

// pair opens the plain socket between ranks 0 and 1 (nil for others).
func pair(b *testing.B, cs []collective.Comm) []net.Conn {
	raws := make([]net.Conn, len(cs))
	eachRank(b, cs[:2], func(c collective.Comm) error {
		var err error
		raws[c.Rank()], err = plainPair(context.Background(), c)
		return err
	})
	b.Cleanup(func() {
		for _, r := range raws {
			if r != nil {
				r.Close()
			}
		}
	})
	return raws
}

func eachRank(b *testing.B, cs []collective.Comm, f func(c collective.Comm) error) {
	errs := make([]error, len(cs))
	var wg sync.WaitGroup
	for r, c := range cs {
		wg.Go(func() { errs[r] = f(c) })
	}
	wg.Wait()
	for r, err := range errs {
		if err != nil {
			b.Fatalf("rank %d: %v", r, err)
		}
	}
}

// BenchmarkPingPong8B is the small-message round trip between two ranks
// (bench p2p's ping-pong); its allocs/op are what a round trip leaves for the
// garbage collector: none, so no collection lands in a latency run.
//
//	go test -run '^$' -bench PingPong -benchmem ./bench/
func BenchmarkPingPong8B(b *testing.B) {
	cs := tcpWorld(b, 2)
	ctx := context.Background()
	b.ReportAllocs()
	n := b.N
	b.ResetTimer()
	eachRank(b, cs, func(c collective.Comm) error {
		_, err := pingPongComm(ctx, c, make([]byte, 8), n)
		return err
	})
}
