package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"time"
	"unsafe"

	"github.com/pplaunch/pplaunch/collective"
)

// DeviceMemory is the GPU memory a device benchmark (the nccl backend)
// moves: allocated, filled and read back by the caller's device thread.
type DeviceMemory interface {
	Alloc(bytes int) (uintptr, error)
	Upload(dst uintptr, src []byte) error
	Download(dst []byte, src uintptr) error
	Free(p uintptr)
}

// RunP2PDevice is `pplaunch bench p2p --backend nccl`: rank 0 streams
// messages of device memory to rank 1, in nccl-tests' columns (size, count,
// time, algbw, busbw, #wrong; busbw = algbw for one link). Ranks past 1 only
// add to the count of wrong bytes. Latency and the plain-socket ceiling are the TCP benchmark's.
func RunP2PDevice(ctx context.Context, c collective.Comm, mem DeviceMemory, opts P2POptions, w io.Writer) error {
	if c.Size() < 2 {
		return errors.New("bench p2p: needs at least 2 ranks")
	}
	szs, err := sizes(opts.Min, opts.Max, opts.Iters, opts.Reps)
	if err != nil {
		return fmt.Errorf("bench p2p: %w", err)
	}
	rep := newReport(w, opts.JSON, c.Rank() == 0)
	rep.header(fmt.Sprintf("p2p (nccl): rank 0 -> rank 1 of %d, device memory, one-way, median of %d", c.Size(), max(1, opts.Reps)),
		"%12s %10s %6s %10s %12s %12s %7s", "size", "count", "iters", "time(us)", "algbw(GB/s)", "busbw(GB/s)", "#wrong")
	for _, s := range szs {
		r, err := measureP2PDevice(ctx, c, mem, s, itersFor(opts.Iters, s), opts.Reps)
		if err != nil {
			return fmt.Errorf("bench p2p: %v: %w", Size(s), err)
		}
		rep.row(r, fmt.Sprintf("%12d %10d %6d %10.2f %12.3f %12.3f %7d", s, s, r.Iters, r.Seconds*1e6, r.AlgBW, r.BusBW, r.Wrong))
	}
	if err := c.Barrier(ctx); err != nil {
		return err
	}
	if rep.wrong > 0 {
		return fmt.Errorf("bench p2p: %d wrong bytes", rep.wrong)
	}
	return nil
}

// pattern is the bytes rank 0 sends: never all equal, so a missed copy shows.
func pattern(n int64) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7 + 3)
	}
	return b
}

func measureP2PDevice(ctx context.Context, c collective.Comm, mem DeviceMemory, size int64, iters, reps int) (res Result, err error) {
	res = Result{Bytes: size, Iters: iters}
	p, err := mem.Alloc(int(max(size, 1)))
	if err != nil {
		return res, err
	}
	defer mem.Free(p)
	ack, err := mem.Alloc(4)
	if err != nil {
		return res, err
	}
	defer mem.Free(ack)
	if c.Rank() > 1 { // only the count of wrong bytes involves every rank
		_, err := shareCount(ctx, c, mem, 0, ack)
		return res, err
	}
	host := pattern(size)
	if c.Rank() == 0 {
		err = mem.Upload(p, host)
	} else {
		err = mem.Upload(p, make([]byte, size))
	}
	if err != nil {
		return res, err
	}
	buf, ab := collective.OnDevice(collective.Uint8, p, int(size)), collective.OnDevice(collective.Float32, ack, 1)
	run := func(n int) (time.Duration, error) {
		start := time.Now()
		hs := make([]*collective.Handle, 0, n)
		for range n {
			if c.Rank() == 0 {
				hs = append(hs, c.Isend(1, tagData, buf))
			} else {
				hs = append(hs, c.Irecv(0, tagData, buf))
			}
		}
		for _, h := range hs {
			if err := h.Wait(ctx); err != nil {
				return 0, err
			}
		}
		if c.Rank() == 0 {
			err = c.Recv(ctx, 1, tagAck, ab)
		} else {
			err = c.Send(ctx, 0, tagAck, ab)
		}
		return time.Since(start), err
	}
	if _, err := run(1); err != nil { // warm-up: connections, first touches
		return res, err
	}
	var ds []time.Duration
	for range max(1, reps) {
		d, err := run(iters)
		if err != nil {
			return res, err
		}
		ds = append(ds, d)
	}
	if c.Rank() == 1 {
		got := make([]byte, size)
		if err := mem.Download(got, p); err != nil {
			return res, err
		}
		for i := range got {
			if got[i] != host[i] {
				res.Wrong++
			}
		}
	}
	wrong, err := shareCount(ctx, c, mem, res.Wrong, ack)
	if err != nil {
		return res, err
	}
	res.Wrong = wrong
	per := median(ds).Seconds() / float64(iters)
	res.Seconds, res.AlgBW = per, float64(size)/per/gb
	res.BusBW = res.AlgBW
	return res, nil
}

// shareCount sums a count over all ranks through device memory at p (one
// float32), so rank 0's row reports what any rank saw.
func shareCount(ctx context.Context, c collective.Comm, mem DeviceMemory, n int, p uintptr) (int, error) {
	v := float32(n)
	if err := mem.Upload(p, unsafe.Slice((*byte)(unsafe.Pointer(&v)), 4)); err != nil {
		return 0, err
	}
	if err := c.AllReduce(ctx, collective.OnDevice(collective.Float32, p, 1), collective.Sum); err != nil {
		return 0, err
	}
	if err := mem.Download(unsafe.Slice((*byte)(unsafe.Pointer(&v)), 4), p); err != nil {
		return 0, err
	}
	return int(math.Round(float64(v))), nil
}

// RunAllReduceDevice is `pplaunch bench allreduce --backend nccl`: float32
// sum all-reduces of device memory over all ranks, checked for exactness,
// in nccl-tests' columns (busbw = algbw·2(n-1)/n).
func RunAllReduceDevice(ctx context.Context, c collective.Comm, mem DeviceMemory, opts AllReduceOptions, w io.Writer) error {
	lo := opts.Min
	if lo > 0 && lo < 4 {
		lo = 4
	}
	szs, err := sizes(lo, opts.Max, opts.Iters, opts.Reps)
	if err != nil {
		return fmt.Errorf("bench allreduce: %w", err)
	}
	rep := newReport(w, opts.JSON, c.Rank() == 0)
	rep.header(fmt.Sprintf("allreduce (nccl): float32 sum over %d ranks, device memory, median of %d", c.Size(), max(1, opts.Reps)),
		"%12s %10s %6s %10s %12s %12s %7s", "size", "count", "iters", "time(us)", "algbw(GB/s)", "busbw(GB/s)", "#wrong")
	for _, s := range szs {
		r, err := measureAllReduceDevice(ctx, c, mem, s, itersFor(opts.Iters, s), opts.Reps)
		if err != nil {
			return fmt.Errorf("bench allreduce: %v: %w", Size(s), err)
		}
		rep.row(r, fmt.Sprintf("%12d %10d %6d %10.2f %12.3f %12.3f %7d", r.Bytes, r.Bytes/4, r.Iters, r.Seconds*1e6, r.AlgBW, r.BusBW, r.Wrong))
	}
	if rep.wrong > 0 {
		return fmt.Errorf("bench allreduce: %d wrong elements", rep.wrong)
	}
	return nil
}

func measureAllReduceDevice(ctx context.Context, c collective.Comm, mem DeviceMemory, size int64, iters, reps int) (Result, error) {
	n := c.Size()
	res := Result{Bytes: size - size%4, Iters: iters}
	x := make([]float32, size/4)
	for i := range x { // small integers: every summation order is exact
		x[i] = float32((c.Rank()+1)*(i%7+1) + 1)
	}
	p, err := mem.Alloc(int(max(res.Bytes, 4)))
	if err != nil {
		return res, err
	}
	defer mem.Free(p)
	if err := mem.Upload(p, unsafeBytes(x)); err != nil {
		return res, err
	}
	buf := collective.OnDevice(collective.Float32, p, len(x))
	if err := c.AllReduce(ctx, buf, collective.Sum); err != nil {
		return res, err
	}
	if err := mem.Download(unsafeBytes(x), p); err != nil {
		return res, err
	}
	tri := float32(n * (n + 1) / 2)
	for i, v := range x {
		if v != tri*float32(i%7+1)+float32(n) {
			res.Wrong++
		}
	}
	cnt, err := mem.Alloc(4)
	if err != nil {
		return res, err
	}
	defer mem.Free(cnt)
	if res.Wrong, err = shareCount(ctx, c, mem, res.Wrong, cnt); err != nil {
		return res, err
	}
	var ds []time.Duration
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
		ds = append(ds, time.Since(start))
	}
	per := median(ds).Seconds() / float64(iters)
	res.Seconds, res.AlgBW = per, float64(res.Bytes)/per/gb
	res.BusBW = res.AlgBW * 2 * float64(n-1) / float64(n)
	return res, nil
}
