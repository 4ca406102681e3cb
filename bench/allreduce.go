package bench

import (
	"context"
	"fmt"
	"io"
	"math"
	"net"
	"time"

	"github.com/pplaunch/pplaunch/collective"
)

// RunAllReduce is `pplaunch bench allreduce`, called by every rank: float32
// sum all-reduces of buffers in mem over all ranks, checked for exactness,
// in nccl-tests' columns (busbw = algbw·2(n-1)/n). In host memory the bus
// bandwidth is compared with the plain-socket bandwidth between ranks 0 and
// 1 measured in the same run.
func RunAllReduce(ctx context.Context, c collective.Comm, mem Memory, opts AllReduceOptions, w io.Writer) error {
	lo := opts.Min
	if lo > 0 && lo < 4 {
		lo = 4 // one float32
	}
	szs, err := sizes(lo, opts.Max, opts.Iters, opts.Reps)
	if err != nil {
		return fmt.Errorf("bench allreduce: %w", err)
	}
	raw, err := ceiling(ctx, c, !opts.NoPlain && !mem.gpu() && c.Size() > 1 && c.Rank() <= 1)
	if err != nil {
		return fmt.Errorf("bench allreduce: %w", err)
	}
	if raw != nil {
		defer raw.Close()
	}
	rep := newReport(w, opts.JSON, c.Rank() == 0)
	if mem.gpu() {
		rep.header(fmt.Sprintf("allreduce (nccl): float32 sum over %d ranks, device memory, median of %d", c.Size(), max(1, opts.Reps)),
			"%12s %10s %6s %10s %12s %12s %7s", "size", "count", "iters", "time(us)", "algbw(GB/s)", "busbw(GB/s)", "#wrong")
	} else {
		rep.header(fmt.Sprintf("allreduce: float32 sum over %d ranks, median of %d; ratio = busbw / plain-socket bandwidth between ranks 0 and 1", c.Size(), max(1, opts.Reps)),
			"%12s %10s %6s %10s %12s %12s %11s %6s %7s", "size", "count", "iters", "time(us)", "algbw(GB/s)", "busbw(GB/s)", "ceil(GB/s)", "ratio", "#wrong")
	}
	for _, s := range szs {
		r, err := MeasureAllReduce(ctx, c, mem, raw, s, itersFor(opts.Iters, s), opts.Reps)
		if err != nil {
			return fmt.Errorf("bench allreduce: %v: %w", Size(s), err)
		}
		if mem.gpu() {
			rep.row(r, fmt.Sprintf("%12d %10d %6d %10.2f %12.3f %12.3f %7d", r.Bytes, r.Bytes/4, r.Iters, r.Seconds*1e6, r.AlgBW, r.BusBW, r.Wrong))
			continue
		}
		rep.row(r, fmt.Sprintf("%12d %10d %6d %10.2f %12.3f %12.3f %11s %6s %7d", s, s/4, r.Iters, r.Seconds*1e6, r.AlgBW, r.BusBW,
			opt(r.CeilingBW, "%.3f"), opt(r.Ratio, "%.2f"), r.Wrong))
	}
	if rep.wrong > 0 {
		return fmt.Errorf("bench allreduce: %d wrong elements", rep.wrong)
	}
	return nil
}

// MeasureAllReduce times float32 sum all-reduces of size bytes in mem on
// every rank of c; raw (ranks 0 and 1 only, may be nil) measures the
// ceiling.
func MeasureAllReduce(ctx context.Context, c collective.Comm, mem Memory, raw net.Conn, size int64, iters, reps int) (Result, error) {
	n := c.Size()
	res := Result{Bytes: size - size%4, Iters: iters}
	x := make([]float32, size/4)
	if raw != nil { // warm the plain socket like the all-reduce below warms ours
		if _, err := streamPlain(raw, c.Rank(), unsafeBytes(x), 1); err != nil {
			return res, err
		}
	}
	// Small integers: every summation order gives the same exact result.
	for i := range x {
		x[i] = float32((c.Rank()+1)*(i%7+1) + 1)
	}
	r, err := mem.alloc(collective.Float32, len(x))
	if err != nil {
		return res, err
	}
	defer r.free()
	buf := r.buffer()
	if err := r.write(unsafeBytes(x)); err != nil {
		return res, err
	}
	if err := c.AllReduce(ctx, buf, collective.Sum); err != nil {
		return res, err
	}
	if err := r.read(unsafeBytes(x)); err != nil {
		return res, err
	}
	tri := float32(n * (n + 1) / 2)
	for i, v := range x {
		if v != tri*float32(i%7+1)+float32(n) {
			res.Wrong++
		}
	}
	if res.Wrong, err = shareCount(ctx, c, mem, res.Wrong); err != nil {
		return res, err
	}
	var ours, plain []time.Duration
	for range max(1, reps) {
		if err := c.Barrier(ctx); err != nil {
			return res, err
		}
		start := time.Now()
		for range iters {
			if err := c.AllReduce(ctx, buf, collective.Sum); err != nil {
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

// shareCount sums a count over all ranks, so rank 0's row reports what any
// rank saw: as a float64 in host memory, as a float32 in GPU memory (where
// the communicator moves device buffers only).
func shareCount(ctx context.Context, c collective.Comm, mem Memory, n int) (int, error) {
	if !mem.gpu() {
		v := []float64{float64(n)}
		err := c.AllReduce(ctx, collective.F64(v), collective.Sum)
		return int(v[0]), err
	}
	r, err := mem.alloc(collective.Float32, 1)
	if err != nil {
		return 0, err
	}
	defer r.free()
	v := []float32{float32(n)}
	if err := r.write(unsafeBytes(v)); err != nil {
		return 0, err
	}
	if err := c.AllReduce(ctx, r.buffer(), collective.Sum); err != nil {
		return 0, err
	}
	if err := r.read(unsafeBytes(v)); err != nil {
		return 0, err
	}
	return int(math.Round(float64(v[0]))), nil
}
