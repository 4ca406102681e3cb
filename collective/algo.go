package collective

import (
	"context"
	"fmt"
	"unsafe"
)

// Reduction order. Every element of an all-reduce is reduced in a fixed order
// that depends only on the world size n and the element's chunk: the buffer
// of N elements is cut into n contiguous chunks (ChunkBounds), and element i
// of chunk c is reduced as ((x[c+1] ⊕ x[c+2]) ⊕ ...) ⊕ x[c] with rank numbers
// taken mod n. The ring produces that order naturally; the direct path for
// small buffers computes the same order on every rank. Hence float64 sums are
// exactly the fixed-order sums, and every rank holds the same bits.

// ChunkBounds returns the elements [lo, hi) of chunk c when n elements are cut
// into parts chunks: the first n%parts chunks have one element more.
func ChunkBounds(n, parts, c int) (lo, hi int) {
	base, rem := n/parts, n%parts
	lo = c*base + min(c, rem)
	hi = lo + base
	if c < rem {
		hi++
	}
	return lo, hi
}

type float interface{ float32 | float64 }

func wrap[T float](x []T) Buffer {
	switch v := any(x).(type) {
	case []float32:
		return F32(v)
	case []float64:
		return F64(v)
	}
	panic("unreachable")
}

// asFloats reinterprets scratch bytes as a []T of n elements.
func asFloats[T float](b []byte, n int) []T {
	if n == 0 {
		return nil
	}
	var z T
	if len(b) < n*int(unsafe.Sizeof(z)) {
		panic("collective: scratch too small")
	}
	return unsafe.Slice((*T)(unsafe.Pointer(&b[0])), n)
}

// reduce sets acc[i] = acc[i] ⊕ x[i]. Max propagates NaN.
func reduce[T float](acc, x []T, op ReduceOp) {
	x = x[:len(acc)]
	if op == Max {
		for i, v := range x {
			if v != v || v > acc[i] {
				acc[i] = v
			}
		}
		return
	}
	for i := addVec(acc, x); i < len(acc); i++ {
		acc[i] += x[i]
	}
}

// reduceFrom sets own[i] = partial[i] ⊕ own[i] (the ring's update: the partial
// result so far, then this rank's contribution).
func reduceFrom[T float](own, partial []T, op ReduceOp) {
	partial = partial[:len(own)]
	if op == Max {
		for i, p := range partial {
			if o := own[i]; !(o != o || o > p) {
				own[i] = p
			}
		}
		return
	}
	// Vector kernels where there are any, then unrolled by 8. Each element
	// is still partial + own, so the result does not depend on either.
	i := addVec(own, partial)
	for ; i+8 <= len(own); i += 8 {
		o, q := own[i:i+8:i+8], partial[i:i+8:i+8]
		o[0], o[1], o[2], o[3] = q[0]+o[0], q[1]+o[1], q[2]+o[2], q[3]+o[3]
		o[4], o[5], o[6], o[7] = q[4]+o[4], q[5]+o[5], q[6]+o[6], q[7]+o[7]
	}
	for ; i < len(own); i++ {
		own[i] = partial[i] + own[i]
	}
}

func divide[T float](x []T, n int) {
	d := T(n)
	for i := range x {
		x[i] /= d
	}
}

// scratchBytes returns c's scratch buffer with at least n bytes.
func (c *comm) scratchBytes(n int) []byte {
	if cap(c.scratch) < n {
		c.scratch = make([]byte, n)
	}
	return c.scratch[:n]
}

// flight tracks the operations of one collective call so that a failure
// cancels all of them before the call returns.
type flight struct{ hs []*Handle }

func (f *flight) add(h *Handle) *Handle { f.hs = append(f.hs, h); return h }

func (f *flight) fail(err error) error {
	for _, h := range f.hs {
		h.cancel(errCancelled)
		<-h.Done()
	}
	return err
}

func (f *flight) waitAll(ctx context.Context) error {
	if err := waitAll(ctx, f.hs); err != nil {
		return err
	}
	f.hs = f.hs[:0]
	return nil
}

func mod(a, n int) int { return ((a % n) + n) % n }

// collTag is the tag of piece (phase, step, seg) of collective call seq.
func collTag(seq uint32, phase, step, seg int) Tag {
	return Tag{Kind: kindCollective, Chunk: uint16(step), Step: seq, MicroBatch: uint32(phase)<<28 | uint32(seg)}
}

func (c *comm) AllReduce(ctx context.Context, buf Buffer, op ReduceOp) error {
	if err := buf.check(); err != nil {
		return fmt.Errorf("rank %d: all-reduce: %w", c.ranks[c.me], err)
	}
	if op > Max {
		return fmt.Errorf("rank %d: all-reduce: unknown op %d", c.ranks[c.me], op)
	}
	if c.closed.Load() {
		return fmt.Errorf("rank %d: all-reduce: %w", c.ranks[c.me], ErrClosed)
	}
	seq := c.seq.Add(1)
	var err error
	switch buf.DType {
	case Float32:
		err = allReduce(ctx, c, seq, buf.F32, op)
	case Float64:
		err = allReduce(ctx, c, seq, buf.F64, op)
	default:
		return fmt.Errorf("rank %d: all-reduce: dtype %s is not float32 or float64", c.ranks[c.me], buf.DType)
	}
	if err != nil {
		return fmt.Errorf("rank %d: all-reduce %s of %d elements (call %d): %w", c.ranks[c.me], op, buf.Len(), seq, err)
	}
	return nil
}

func allReduce[T float](ctx context.Context, c *comm, seq uint32, data []T, op ReduceOp) error {
	n := len(c.ranks)
	if n == 1 {
		return nil
	}
	var z T
	if len(data)*int(unsafe.Sizeof(z)) <= c.opts.SmallBytes || len(data) < n {
		return allReduceDirect(ctx, c, seq, data, op)
	}
	return allReduceRing(ctx, c, seq, data, op)
}

// allReduceDirect sends the whole buffer to every other rank in one round and
// reduces locally, in the fixed order, on every rank.
func allReduceDirect[T float](ctx context.Context, c *comm, seq uint32, data []T, op ReduceOp) error {
	n, r, N := len(c.ranks), c.me, len(data)
	var z T
	all := asFloats[T](c.scratchBytes(n*N*int(unsafe.Sizeof(z))), n*N)
	src := func(k int) []T { return all[k*N : (k+1)*N] }
	var f flight
	for k := range n {
		if k == r {
			continue
		}
		f.add(c.start(true, SendOp(k, collTag(seq, 0, 0, 0), wrap(data)), RecvOp(k, collTag(seq, 0, 0, 0), wrap(src(k)))))
	}
	if err := f.waitAll(ctx); err != nil {
		return err
	}
	copy(src(r), data)
	for ch := range n {
		lo, hi := ChunkBounds(N, n, ch)
		acc := data[lo:hi]
		copy(acc, src(mod(ch+1, n))[lo:hi])
		for k := 2; k <= n; k++ {
			reduce(acc, src(mod(ch+k, n))[lo:hi], op)
		}
		if op == Avg {
			divide(acc, n)
		}
	}
	return nil
}

// segments returns the number of pipelining pieces of a chunk of length l.
func segments(l, seg int) int { return (l + seg - 1) / seg }

// allReduceRing is a ring reduce-scatter then a ring all-gather, each chunk
// pipelined in segments so that receiving, reducing and forwarding overlap.
// After the reduce-scatter, rank r holds the reduced chunk r.
func allReduceRing[T float](ctx context.Context, c *comm, seq uint32, data []T, op ReduceOp) error {
	n, r, N := len(c.ranks), c.me, len(data)
	var z T
	seg := max(1, c.segmentBytes()/int(unsafe.Sizeof(z)))
	next, prev := mod(r+1, n), mod(r-1, n)
	chunk := func(k int) []T { lo, hi := ChunkBounds(N, n, k); return data[lo:hi] }
	piece := func(x []T, j int) []T { return x[j*seg : min(len(x), (j+1)*seg)] }
	_, maxLen := ChunkBounds(N, n, 0)
	scratch := asFloats[T](c.scratchBytes(2*maxLen*int(unsafe.Sizeof(z))), 2*maxLen)
	slot := func(s int) []T { return scratch[(s%2)*maxLen : (s%2+1)*maxLen] }

	var f flight
	// Reduce-scatter: at step s, rank r sends chunk r-s-1 and receives chunk r-s-2.
	postRecvs := func(s int) []*Handle {
		k := mod(r-s-2, n)
		hs := make([]*Handle, segments(len(chunk(k)), seg))
		for j := range hs {
			hs[j] = f.add(c.start(true, RecvOp(prev, collTag(seq, 1, s, j), wrap(piece(slot(s)[:len(chunk(k))], j)))))
		}
		return hs
	}
	recvs := postRecvs(0)
	sent := make([][]*Handle, n-1) // reduce-scatter sends by step
	first := chunk(mod(r-1, n))
	for j := range segments(len(first), seg) {
		sent[0] = append(sent[0], f.add(c.start(true, SendOp(next, collTag(seq, 1, 0, j), wrap(piece(first, j))))))
	}
	for s := 0; s < n-1; s++ {
		var following []*Handle
		if s+1 < n-1 {
			following = postRecvs(s + 1)
		}
		own := chunk(mod(r-s-2, n))
		for j, h := range recvs {
			if err := h.Wait(ctx); err != nil {
				return f.fail(err)
			}
			reduceFrom(piece(own, j), piece(slot(s), j), op)
			if s+1 < n-1 {
				sent[s+1] = append(sent[s+1], f.add(c.start(true, SendOp(next, collTag(seq, 1, s+1, j), wrap(piece(own, j))))))
			}
		}
		recvs = following
	}
	mine := chunk(r)
	if op == Avg {
		divide(mine, n)
	}
	// All-gather: at step s, rank r sends chunk r-s and receives chunk r-s-1
	// straight into place. That chunk was the source of reduce-scatter step
	// s's send, so its receives are posted as soon as that send is done.
	gathered := make([][]*Handle, n-1)
	for s := range n - 1 {
		if err := waitAll(ctx, sent[s]); err != nil {
			return f.fail(err)
		}
		k := chunk(mod(r-s-1, n))
		gathered[s] = make([]*Handle, segments(len(k), seg))
		for j := range gathered[s] {
			gathered[s][j] = f.add(c.start(true, RecvOp(prev, collTag(seq, 2, s, j), wrap(piece(k, j)))))
		}
	}
	for j := range segments(len(mine), seg) {
		f.add(c.start(true, SendOp(next, collTag(seq, 2, 0, j), wrap(piece(mine, j)))))
	}
	for s := range n - 1 {
		k := chunk(mod(r-s-1, n))
		for j, h := range gathered[s] {
			if err := h.Wait(ctx); err != nil {
				return f.fail(err)
			}
			if s+1 < n-1 {
				f.add(c.start(true, SendOp(next, collTag(seq, 2, s+1, j), wrap(piece(k, j)))))
			}
		}
	}
	return f.waitAll(ctx)
}

func (c *comm) Broadcast(ctx context.Context, buf Buffer, root int) error {
	if err := buf.check(); err != nil {
		return fmt.Errorf("rank %d: broadcast: %w", c.ranks[c.me], err)
	}
	if err := c.checkPeer(root); err != nil {
		return fmt.Errorf("rank %d: broadcast root: %w", c.ranks[c.me], err)
	}
	seq := c.seq.Add(1)
	if err := c.broadcast(ctx, seq, buf, root); err != nil {
		return fmt.Errorf("rank %d: broadcast of %d %s from rank %d (call %d): %w", c.ranks[c.me], buf.Len(), buf.DType, root, seq, err)
	}
	return nil
}

// broadcast sends small buffers from the root to everyone directly and pipes
// large ones down the chain root, root+1, ... in segments.
func (c *comm) broadcast(ctx context.Context, seq uint32, buf Buffer, root int) error {
	n, r := len(c.ranks), c.me
	if n == 1 {
		return nil
	}
	var f flight
	size := buf.Len() * buf.DType.Size()
	if size <= c.opts.SmallBytes {
		if r != root {
			return c.start(true, RecvOp(root, collTag(seq, 3, 0, 0), buf)).Wait(ctx)
		}
		for k := range n {
			if k != root {
				f.add(c.start(true, SendOp(k, collTag(seq, 3, 0, 0), buf)))
			}
		}
		return f.waitAll(ctx)
	}
	seg := max(1, c.segmentBytes()/buf.DType.Size())
	m := segments(buf.Len(), seg)
	part := func(j int) Buffer { return buf.slice(j*seg, min(buf.Len(), (j+1)*seg)) }
	pos := mod(r-root, n)
	next, prev := mod(r+1, n), mod(r-1, n)
	if pos == 0 {
		for j := range m {
			f.add(c.start(true, SendOp(next, collTag(seq, 4, 0, j), part(j))))
		}
		return f.waitAll(ctx)
	}
	recvs := make([]*Handle, m)
	for j := range m {
		recvs[j] = f.add(c.start(true, RecvOp(prev, collTag(seq, 4, 0, j), part(j))))
	}
	for j, h := range recvs {
		if err := h.Wait(ctx); err != nil {
			return f.fail(err)
		}
		if pos < n-1 {
			f.add(c.start(true, SendOp(next, collTag(seq, 4, 0, j), part(j))))
		}
	}
	return f.waitAll(ctx)
}

// Barrier is a dissemination barrier: in round k every rank signals rank+2^k
// and waits for rank-2^k; after ⌈log2 n⌉ rounds everyone has heard from all.
func (c *comm) Barrier(ctx context.Context) error {
	if c.closed.Load() {
		return fmt.Errorf("rank %d: barrier: %w", c.ranks[c.me], ErrClosed)
	}
	seq := c.seq.Add(1)
	n, r := len(c.ranks), c.me
	for k, round := 1, 0; k < n; k, round = k*2, round+1 {
		tag := collTag(seq, 5, round, 0)
		h := c.start(true, SendOp(mod(r+k, n), tag, Bytes(nil)), RecvOp(mod(r-k, n), tag, Bytes(nil)))
		if err := h.Wait(ctx); err != nil {
			return fmt.Errorf("rank %d: barrier (call %d) round %d: %w", c.ranks[c.me], seq, round, err)
		}
	}
	return nil
}
