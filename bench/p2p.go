package bench

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/pplaunch/pplaunch/collective"
)

// RunP2P is `pplaunch bench p2p`, called by every rank: rank 0 streams
// messages in mem to rank 1. In host memory it measures the one-way
// bandwidth, then a ping-pong for latency, and the same over a plain TCP
// socket between the same two processes for the ceiling, alternating the
// two (ranks past 1 wait); in GPU memory, nccl-tests' columns (size, count,
// time, algbw, busbw, #wrong; busbw = algbw for one link), every rank
// adding to the count of wrong bytes. Rank 0 writes the report to w.
func RunP2P(ctx context.Context, c collective.Comm, mem Memory, opts P2POptions, w io.Writer) error {
	if c.Size() < 2 {
		return errors.New("bench p2p: needs at least 2 ranks")
	}
	if opts.LatMax < 0 {
		return fmt.Errorf("bench p2p: --lat-max %d: a size must not be negative", int64(opts.LatMax))
	}
	szs, err := sizes(opts.Min, opts.Max, opts.Iters, opts.Reps)
	if err != nil {
		return fmt.Errorf("bench p2p: %w", err)
	}
	if mem.gpu() {
		return runP2PBatched(ctx, c, mem, szs, opts, w)
	}
	if c.Rank() > 1 {
		return c.Barrier(ctx)
	}
	raw, err := ceiling(ctx, c, !opts.NoPlain)
	if err != nil {
		return fmt.Errorf("bench p2p: %w", err)
	}
	if raw != nil {
		defer raw.Close()
	}
	rep := newReport(w, opts.JSON, c.Rank() == 0)
	rep.header(fmt.Sprintf("p2p: rank 0 -> rank 1 of %d, one-way, median of %d; ceiling: plain Go TCP socket between the same ranks", c.Size(), max(1, opts.Reps)),
		"%12s %6s %10s %12s %11s %6s %9s %13s %9s", "size", "iters", "time(us)", "algbw(GB/s)", "ceil(GB/s)", "ratio", "lat(us)", "ceil_lat(us)", "lat_ratio")
	for _, s := range szs {
		r, err := MeasureP2P(ctx, c, raw, s, itersFor(opts.Iters, s), opts.Reps, s <= int64(opts.LatMax) || (opts.LatMax == 0 && s <= 64<<10))
		if err != nil {
			return fmt.Errorf("bench p2p: %v: %w", Size(s), err)
		}
		rep.row(r, fmt.Sprintf("%12d %6d %10.2f %12.3f %11s %6s %9s %13s %9s", s, r.Iters, r.Seconds*1e6, r.AlgBW,
			opt(r.CeilingBW, "%.3f"), opt(r.Ratio, "%.2f"), opt(r.LatencyUS, "%.2f"), opt(r.CeilingLatUS, "%.2f"), opt(r.LatRatio, "%.2f")))
	}
	return c.Barrier(ctx)
}

// warmRoundTrips is how many untimed ping-pongs precede the timed ones, as in
// the OSU micro-benchmarks (which skip 1000 for small messages): a process's
// first round trips are slower than its later ones. bench/p2p_torch.py and
// bench/mpi do the same.
const warmRoundTrips = 1000

// MeasureP2P measures one size between ranks 0 and 1 of c (raw, if not nil, is
// a plain socket between the same two ranks) and returns rank 0's view.
func MeasureP2P(ctx context.Context, c collective.Comm, raw net.Conn, size int64, iters, reps int, latency bool) (Result, error) {
	res := Result{Bytes: size, Iters: iters}
	reps = max(1, reps)
	buf, other := make([]byte, size), make([]byte, size)
	// Touch every page and run each path once untimed, so that neither side
	// pays first-touch page faults or connection warm-up in its timings.
	for i := range buf {
		buf[i], other[i] = byte(i), byte(i)
	}
	if _, err := streamComm(ctx, c, buf, other, 1); err != nil {
		return res, err
	}
	if raw != nil {
		if _, err := streamPlain(raw, c.Rank(), buf, 1); err != nil {
			return res, err
		}
	}
	if latency { // and untimed round trips: the first thousand of a run are slower
		if _, err := pingPongComm(ctx, c, buf, warmRoundTrips); err != nil {
			return res, err
		}
		if raw != nil {
			if _, err := pingPongPlain(raw, c.Rank(), buf, warmRoundTrips); err != nil {
				return res, err
			}
		}
	}
	var ours, plain, oursLat, plainLat []time.Duration
	for range reps {
		d, err := streamComm(ctx, c, buf, other, iters)
		if err != nil {
			return res, err
		}
		ours = append(ours, d)
		if raw != nil {
			if d, err = streamPlain(raw, c.Rank(), buf, iters); err != nil {
				return res, err
			}
			plain = append(plain, d)
		}
		if !latency {
			continue
		}
		lat := min(iters, 200)
		if d, err = pingPongComm(ctx, c, buf, lat); err != nil {
			return res, err
		}
		oursLat = append(oursLat, d/time.Duration(2*lat))
		if raw != nil {
			if d, err = pingPongPlain(raw, c.Rank(), buf, lat); err != nil {
				return res, err
			}
			plainLat = append(plainLat, d/time.Duration(2*lat))
		}
	}
	per := median(ours).Seconds() / float64(iters)
	res.Seconds = per
	res.AlgBW = float64(size) / per / gb
	res.BusBW = res.AlgBW
	if len(plain) > 0 {
		res.CeilingBW = float64(size) / (median(plain).Seconds() / float64(iters)) / gb
		res.Ratio = res.AlgBW / res.CeilingBW
	}
	if len(oursLat) > 0 {
		res.LatencyUS = float64(median(oursLat).Nanoseconds()) / 1e3
	}
	if len(plainLat) > 0 {
		res.CeilingLatUS = float64(median(plainLat).Nanoseconds()) / 1e3
		res.LatRatio = res.CeilingLatUS / res.LatencyUS
	}
	return res, nil
}

// streamComm: rank 0 sends iters messages to rank 1, which keeps two receives
// posted (as a pipeline stage does) and acknowledges the last one.
func streamComm(ctx context.Context, c collective.Comm, buf, other []byte, iters int) (time.Duration, error) {
	ack := make([]byte, 1)
	if c.Rank() == 1 {
		bufs := [2]collective.Buffer{collective.Bytes(buf), collective.Bytes(other)}
		hs := [2]*collective.Handle{c.Irecv(0, tagData, bufs[0]), nil}
		for i := range iters {
			if i+1 < iters {
				hs[(i+1)%2] = c.Irecv(0, tagData, bufs[(i+1)%2])
			}
			if err := hs[i%2].Wait(ctx); err != nil {
				return 0, err
			}
		}
		return 0, c.Send(ctx, 0, tagAck, collective.Bytes(ack))
	}
	msg := collective.Bytes(buf)
	start := time.Now()
	for range iters {
		if err := c.Send(ctx, 1, tagData, msg); err != nil {
			return 0, err
		}
	}
	if err := c.Recv(ctx, 1, tagAck, collective.Bytes(ack)); err != nil {
		return 0, err
	}
	return time.Since(start), nil
}

func pingPongComm(ctx context.Context, c collective.Comm, buf []byte, iters int) (time.Duration, error) {
	peer := 1 - c.Rank()
	msg := collective.Bytes(buf) // once: the loop allocates nothing
	start := time.Now()
	for range iters {
		if c.Rank() == 0 {
			if err := c.Send(ctx, peer, tagData, msg); err != nil {
				return 0, err
			}
		}
		if err := c.Recv(ctx, peer, tagData, msg); err != nil {
			return 0, err
		}
		if c.Rank() == 1 {
			if err := c.Send(ctx, peer, tagData, msg); err != nil {
				return 0, err
			}
		}
	}
	return time.Since(start), nil
}

// streamPlain is streamComm over the plain socket: one write per message,
// read in full by the other side, one acknowledgement byte at the end.
func streamPlain(raw net.Conn, rank int, buf []byte, iters int) (time.Duration, error) {
	ack := make([]byte, 1)
	if rank == 1 {
		for range iters {
			if _, err := io.ReadFull(raw, buf); err != nil {
				return 0, err
			}
		}
		_, err := raw.Write(ack)
		return 0, err
	}
	start := time.Now()
	for range iters {
		if _, err := raw.Write(buf); err != nil {
			return 0, err
		}
	}
	if _, err := io.ReadFull(raw, ack); err != nil {
		return 0, err
	}
	return time.Since(start), nil
}

func pingPongPlain(raw net.Conn, rank int, buf []byte, iters int) (time.Duration, error) {
	start := time.Now()
	for range iters {
		if rank == 0 {
			if _, err := raw.Write(buf); err != nil {
				return 0, err
			}
		}
		if _, err := io.ReadFull(raw, buf); err != nil {
			return 0, err
		}
		if rank == 1 {
			if _, err := raw.Write(buf); err != nil {
				return 0, err
			}
		}
	}
	return time.Since(start), nil
}

// ceiling returns the plain socket between ranks 0 and 1 when want is true
// (and nil otherwise). Like every wait on c, its reads and writes fail when
// ctx ends, so a hung peer cannot hold the benchmark for ever.
func ceiling(ctx context.Context, c collective.Comm, want bool) (net.Conn, error) {
	if !want {
		return nil, nil
	}
	raw, err := plainPair(ctx, c)
	if err != nil {
		return nil, fmt.Errorf("plain-socket ceiling between ranks 0 and 1: %w", err)
	}
	stop := context.AfterFunc(ctx, func() { raw.SetDeadline(time.Unix(1, 0)) })
	return &ctxConn{Conn: raw, stop: stop}, nil
}

// ctxConn is a connection whose reads and writes fail once a context ends.
type ctxConn struct {
	net.Conn
	stop func() bool
}

func (c *ctxConn) Close() error {
	c.stop()
	return c.Conn.Close()
}

// plainPair connects ranks 0 and 1 of c with a plain TCP socket: rank 1
// listens on the host it already uses for c (loopback for other backends)
// and sends the address and a fresh nonce over c; rank 0 dials and presents
// the nonce, so no stray connection is taken for the peer.
func plainPair(ctx context.Context, c collective.Comm) (net.Conn, error) {
	const msgLen = 256
	msg := make([]byte, msgLen)
	if c.Rank() == 1 {
		host := "127.0.0.1"
		if a, ok := collective.PeerAddr(c, 1); ok {
			if h, _, err := net.SplitHostPort(a); err == nil {
				host = h
			}
		}
		ln, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
		if err != nil {
			return nil, err
		}
		defer ln.Close()
		stop := context.AfterFunc(ctx, func() { ln.Close() })
		defer stop()
		nonce := make([]byte, 16)
		rand.Read(nonce)
		copy(msg, nonce)
		copy(msg[16:], ln.Addr().String())
		if err := c.Send(ctx, 0, tagAck, collective.Bytes(msg)); err != nil {
			return nil, err
		}
		for {
			conn, err := ln.Accept()
			if err != nil {
				return nil, err
			}
			got := make([]byte, 16)
			conn.SetReadDeadline(time.Now().Add(10 * time.Second))
			if _, err := io.ReadFull(conn, got); err == nil && bytes.Equal(got, nonce) {
				conn.SetReadDeadline(time.Time{})
				return conn, nil
			}
			conn.Close()
		}
	}
	if err := c.Recv(ctx, 1, tagAck, collective.Bytes(msg)); err != nil {
		return nil, err
	}
	addr := string(bytes.TrimRight(msg[16:], "\x00"))
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	if _, err := conn.Write(msg[:16]); err != nil {
		conn.Close()
		return nil, err
	}
	return conn, nil
}
