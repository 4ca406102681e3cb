package bench

import (
	"context"
	"fmt"
	"io"
	"time"

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

// runP2PBatched is RunP2P in GPU memory: every size's messages posted at
// once (as NCCL groups them) and waited for, one row per size in
// nccl-tests' columns; ranks past 1 only add to the count of wrong bytes.
func runP2PBatched(ctx context.Context, c collective.Comm, mem Memory, szs []int64, opts P2POptions, w io.Writer) error {
	rep := newReport(w, opts.JSON, c.Rank() == 0)
	rep.header(fmt.Sprintf("p2p (nccl): rank 0 -> rank 1 of %d, device memory, one-way, median of %d", c.Size(), max(1, opts.Reps)),
		"%12s %10s %6s %10s %12s %12s %7s", "size", "count", "iters", "time(us)", "algbw(GB/s)", "busbw(GB/s)", "#wrong")
	for _, s := range szs {
		r, err := measureP2PBatched(ctx, c, mem, s, itersFor(opts.Iters, s), opts.Reps)
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

// measureP2PBatched measures one size between ranks 0 and 1 of c in mem.
func measureP2PBatched(ctx context.Context, c collective.Comm, mem Memory, size int64, iters, reps int) (res Result, err error) {
	res = Result{Bytes: size, Iters: iters}
	p, err := mem.alloc(collective.Uint8, int(size))
	if err != nil {
		return res, err
	}
	defer p.free()
	ack, err := mem.alloc(collective.Float32, 1)
	if err != nil {
		return res, err
	}
	defer ack.free()
	if c.Rank() > 1 { // only the count of wrong bytes involves every rank
		_, err := shareCount(ctx, c, mem, 0)
		return res, err
	}
	host := pattern(size)
	if c.Rank() == 0 {
		err = p.write(host)
	} else {
		err = p.write(make([]byte, size))
	}
	if err != nil {
		return res, err
	}
	buf, ab := p.buffer(), ack.buffer()
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
		if err := p.read(got); err != nil {
			return res, err
		}
		for i := range got {
			if got[i] != host[i] {
				res.Wrong++
			}
		}
	}
	wrong, err := shareCount(ctx, c, mem, res.Wrong)
	if err != nil {
		return res, err
	}
	res.Wrong = wrong
	per := median(ds).Seconds() / float64(iters)
	res.Seconds, res.AlgBW = per, float64(size)/per/gb
	res.BusBW = res.AlgBW
	return res, nil
}
