package bench

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"github.com/pplaunch/pplaunch/collective"
)

// Size is a byte count written with an optional binary suffix: 8, 64K, 16M,
// 256MiB, 1G.
type Size int64

func (s *Size) UnmarshalText(b []byte) error {
	t := strings.TrimSpace(string(b))
	i := 0
	for i < len(t) && t[i] >= '0' && t[i] <= '9' {
		i++
	}
	mult, ok := map[string]int64{"": 1, "B": 1,
		"K": 1 << 10, "KB": 1 << 10, "KIB": 1 << 10,
		"M": 1 << 20, "MB": 1 << 20, "MIB": 1 << 20,
		"G": 1 << 30, "GB": 1 << 30, "GIB": 1 << 30}[strings.ToUpper(t[i:])]
	n, err := strconv.ParseInt(t[:i], 10, 64)
	if err != nil || !ok || n > (1<<62)/mult {
		return fmt.Errorf("size %q: want a byte count such as 8, 64K, 16M or 256MiB", t)
	}
	*s = Size(n * mult)
	return nil
}

func (s Size) String() string {
	for _, u := range []struct {
		n    int64
		name string
	}{{1 << 30, "GiB"}, {1 << 20, "MiB"}, {1 << 10, "KiB"}} {
		if int64(s) >= u.n && int64(s)%u.n == 0 {
			return fmt.Sprintf("%d%s", int64(s)/u.n, u.name)
		}
	}
	return fmt.Sprintf("%dB", int64(s))
}

// P2POptions are the flags of `pplaunch bench p2p`.
type P2POptions struct {
	Min     Size `arg:"--min" default:"8" help:"smallest message (bytes; K, M, G suffixes)"`
	Max     Size `arg:"--max" default:"256M" help:"largest message; sizes double from --min"`
	Iters   int  `arg:"--iters" help:"messages per size and repetition (default: about 256 MiB worth, 4 to 1000)"`
	Reps    int  `arg:"--reps" default:"3" help:"repetitions per size, alternating ours and the ceiling; the median is reported"`
	LatMax  Size `arg:"--lat-max" default:"64K" help:"largest size whose ping-pong latency is measured"`
	JSON    bool `arg:"--json" help:"print one JSON object per size instead of the table"`
	NoPlain bool `arg:"--no-ceiling" help:"skip the plain-socket ceiling"`
}

// AllReduceOptions are the flags of `pplaunch bench allreduce`.
type AllReduceOptions struct {
	Min     Size `arg:"--min" default:"8" help:"smallest buffer (bytes of float32; K, M, G suffixes)"`
	Max     Size `arg:"--max" default:"256M" help:"largest buffer; sizes double from --min"`
	Iters   int  `arg:"--iters" help:"all-reduces per size and repetition (default: about 256 MiB worth, 4 to 1000)"`
	Reps    int  `arg:"--reps" default:"3" help:"repetitions per size; the median is reported"`
	JSON    bool `arg:"--json" help:"print one JSON object per size instead of the table"`
	NoPlain bool `arg:"--no-ceiling" help:"skip the plain-socket ceiling between ranks 0 and 1"`
}

// Result is one row of a report (and one --json object).
type Result struct {
	Bytes        int64   `json:"bytes"`
	Iters        int     `json:"iters"`
	Seconds      float64 `json:"seconds"`
	AlgBW        float64 `json:"algbw_gbps"`
	BusBW        float64 `json:"busbw_gbps"`
	CeilingBW    float64 `json:"ceiling_gbps,omitempty"`
	Ratio        float64 `json:"ratio,omitempty"`
	LatencyUS    float64 `json:"lat_us,omitempty"`
	CeilingLatUS float64 `json:"ceiling_lat_us,omitempty"`
	LatRatio     float64 `json:"lat_ratio,omitempty"`
	Wrong        int     `json:"wrong"`
}

// sizes lists the sizes from lo doubling up to hi; zero means the flag's
// default, a negative size or count is an error.
func sizes(lo, hi Size, iters, reps int) ([]int64, error) {
	switch {
	case lo < 0:
		return nil, fmt.Errorf("--min %d: a size must not be negative", int64(lo))
	case hi < 0:
		return nil, fmt.Errorf("--max %d: a size must not be negative", int64(hi))
	case iters < 0:
		return nil, fmt.Errorf("--iters %d: must be positive (or 0 for the default)", iters)
	case reps < 0:
		return nil, fmt.Errorf("--reps %d: must be positive (or 0 for the default)", reps)
	}
	if lo == 0 {
		lo = 8
	}
	if hi == 0 {
		hi = 256 << 20
	}
	if lo > hi {
		return nil, fmt.Errorf("--min %v is larger than --max %v", lo, hi)
	}
	var out []int64
	for s := int64(lo); s <= int64(hi); s *= 2 {
		out = append(out, s)
	}
	return out, nil
}

func itersFor(fixed int, size int64) int {
	if fixed > 0 {
		return fixed
	}
	return int(min(1000, max(4, (256<<20)/size)))
}

const gb = 1e9

var (
	tagData = collective.Tag{Kind: collective.Data}
	tagAck  = collective.Tag{Kind: collective.Control}
)

// RunP2P is `pplaunch bench p2p`, called by every rank: rank 0 streams
// messages to rank 1 (one-way bandwidth, then a ping-pong for latency), and
// over a plain TCP socket between the same two processes for the ceiling,
// alternating the two. Rank 0 writes the report to w; other ranks wait.
func RunP2P(ctx context.Context, c collective.Comm, opts P2POptions, w io.Writer) error {
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

// RunAllReduce is `pplaunch bench allreduce`, called by every rank: float32
// sum all-reduces over all ranks, checked for exactness, with the bus
// bandwidth (algbw·2(n-1)/n, as nccl-tests) compared to the plain-socket
// bandwidth between ranks 0 and 1 measured in the same run.
func RunAllReduce(ctx context.Context, c collective.Comm, opts AllReduceOptions, w io.Writer) error {
	lo := opts.Min
	if lo > 0 && lo < 4 {
		lo = 4 // one float32
	}
	szs, err := sizes(lo, opts.Max, opts.Iters, opts.Reps)
	if err != nil {
		return fmt.Errorf("bench allreduce: %w", err)
	}
	raw, err := ceiling(ctx, c, !opts.NoPlain && c.Size() > 1 && c.Rank() <= 1)
	if err != nil {
		return fmt.Errorf("bench allreduce: %w", err)
	}
	if raw != nil {
		defer raw.Close()
	}
	rep := newReport(w, opts.JSON, c.Rank() == 0)
	rep.header(fmt.Sprintf("allreduce: float32 sum over %d ranks, median of %d; ratio = busbw / plain-socket bandwidth between ranks 0 and 1", c.Size(), max(1, opts.Reps)),
		"%12s %10s %6s %10s %12s %12s %11s %6s %7s", "size", "count", "iters", "time(us)", "algbw(GB/s)", "busbw(GB/s)", "ceil(GB/s)", "ratio", "#wrong")
	for _, s := range szs {
		r, err := MeasureAllReduce(ctx, c, raw, s, itersFor(opts.Iters, s), opts.Reps)
		if err != nil {
			return fmt.Errorf("bench allreduce: %v: %w", Size(s), err)
		}
		rep.row(r, fmt.Sprintf("%12d %10d %6d %10.2f %12.3f %12.3f %11s %6s %7d", s, s/4, r.Iters, r.Seconds*1e6, r.AlgBW, r.BusBW,
			opt(r.CeilingBW, "%.3f"), opt(r.Ratio, "%.2f"), r.Wrong))
	}
	if rep.wrong > 0 {
		return fmt.Errorf("bench allreduce: %d wrong elements", rep.wrong)
	}
	return nil
}

// MeasureAllReduce times float32 sum all-reduces of size bytes on every rank
// of c; raw (ranks 0 and 1 only, may be nil) measures the ceiling.
func MeasureAllReduce(ctx context.Context, c collective.Comm, raw net.Conn, size int64, iters, reps int) (Result, error) {
	n := c.Size()
	res := Result{Bytes: size - size%4, Iters: iters}
	x := make([]float32, size/4)
	if raw != nil { // warm the plain socket like the all-reduce below warms ours
		if _, err := streamPlain(raw, c.Rank(), unsafeBytes(x), 1); err != nil {
			return res, err
		}
	}
	// Small integers: every summation order gives the same exact result.
	fill := func() {
		for i := range x {
			x[i] = float32((c.Rank()+1)*(i%7+1) + 1)
		}
	}
	fill()
	if err := c.AllReduce(ctx, collective.F32(x), collective.Sum); err != nil {
		return res, err
	}
	tri := float32(n * (n + 1) / 2)
	for i, v := range x {
		if v != tri*float32(i%7+1)+float32(n) {
			res.Wrong++
		}
	}
	// Every rank reports the total, so rank 0's row counts what any rank saw.
	wrong := []float64{float64(res.Wrong)}
	if err := c.AllReduce(ctx, collective.F64(wrong), collective.Sum); err != nil {
		return res, err
	}
	res.Wrong = int(wrong[0])
	var ours, plain []time.Duration
	for range max(1, reps) {
		if err := c.Barrier(ctx); err != nil {
			return res, err
		}
		start := time.Now()
		for range iters {
			if err := c.AllReduce(ctx, collective.F32(x), collective.Sum); err != nil {
				return res, err
			}
		}
		ours = append(ours, time.Since(start))
		if raw != nil {
			d, err := streamPlain(raw, c.Rank(), unsafeBytes(x), iters)
			if err != nil {
				return res, err
			}
			plain = append(plain, d)
		}
	}
	per := median(ours).Seconds() / float64(iters)
	res.Seconds = per
	res.AlgBW = float64(res.Bytes) / per / gb
	res.BusBW = res.AlgBW * 2 * float64(n-1) / float64(n)
	if c.Rank() == 0 && len(plain) > 0 {
		res.CeilingBW = float64(res.Bytes) / (median(plain).Seconds() / float64(iters)) / gb
		res.Ratio = res.BusBW / res.CeilingBW
	}
	return res, nil
}

func unsafeBytes(x []float32) []byte {
	if len(x) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&x[0])), 4*len(x))
}

func opt(v float64, format string) string {
	if v == 0 {
		return "-"
	}
	return fmt.Sprintf(format, v)
}

// report writes nccl-tests-style tables or JSON lines, on rank 0 only.
type report struct {
	w     io.Writer
	json  bool
	on    bool
	wrong int
}

func newReport(w io.Writer, asJSON, on bool) *report { return &report{w: w, json: asJSON, on: on} }

// header prints the title and the column names, right-aligned in the widths
// of the row format (its first column loses one character to the '#').
func (r *report) header(title, format string, cols ...any) {
	if !r.on || r.json {
		return
	}
	line := fmt.Sprintf(format, cols...)
	fmt.Fprintf(r.w, "# %s\n#\n#%s\n", title, line[1:])
}

func (r *report) row(res Result, line string) {
	r.wrong += res.Wrong
	if !r.on {
		return
	}
	if r.json {
		b, _ := json.Marshal(res)
		fmt.Fprintln(r.w, string(b))
		return
	}
	fmt.Fprintln(r.w, line)
}
