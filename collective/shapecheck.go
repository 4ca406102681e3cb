package collective

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// A backend that carries no header with its messages (NCCL) cannot tell a
// receive of the wrong size or dtype from a right one: it would fill the
// buffer with whatever arrives. CheckShapes closes that gap out of band:
// every rank states, once per run (or per step), the dtype and shape of
// each kind of message it sends to and receives from each peer, and the
// ranks compare their statements over a side channel (any Comm: the TCP
// communicator, or the memory one in tests) before any payload moves.

// Transfer is one kind of message a rank sends or receives: with Peer, of
// Kind and Chunk, always of DType and Shape. The step and micro-batch of a
// tag do not matter: a stage's messages of one kind and chunk have one shape.
type Transfer struct {
	Send  bool
	Peer  int
	Kind  Kind
	Chunk uint16
	DType DType
	Shape []int
}

func (t Transfer) key() tkey { return tkey{t.Send, t.Peer, t.Kind, t.Chunk} }

type tkey struct {
	send  bool
	peer  int
	kind  Kind
	chunk uint16
}

// ErrShape marks a transfer shape that the two ranks state differently.
var ErrShape = errors.New("transfer shapes differ")

// CheckShapes exchanges mine (this rank's transfers, with peers as ranks of
// side) with every other rank of side and compares them: each receive here
// against the peer's send to here, and each of the peer's sends to here
// against a receive here. step is the Step of the side channel's tags (the
// training step under per-step checking; any number otherwise); every rank
// calls CheckShapes with the same step. The error names both ranks and both
// shapes, e.g. "activation chunk=1 from rank 0 to rank 1: rank 0 sends
// float32[4 8 16] but rank 1 expects float32[4 8 32]". When any rank finds a
// difference, every rank returns an error (the others name that rank), so
// that no rank starts moving payloads.
func CheckShapes(ctx context.Context, side Comm, step int, mine []Transfer) error {
	me := side.Rank()
	byPeer, err := indexTransfers(me, side.Size(), mine)
	if err != nil {
		return err
	}
	theirs, err := exchangeShapes(ctx, side, step, byPeer)
	if err != nil {
		return fmt.Errorf("rank %d: shape check: %w", me, err)
	}
	var errs []error
	for q := range side.Size() {
		if q == me {
			continue
		}
		errs = append(errs, compareShapes(me, q, byPeer[q], theirs[q])...)
	}
	if len(errs) > 0 {
		err = errors.Join(errs...)
	}
	bad, verr := shareVerdict(ctx, side, step, err != nil)
	switch {
	case err != nil:
		return err
	case verr != nil:
		return fmt.Errorf("rank %d: shape check: %w", me, verr)
	case len(bad) > 0:
		return fmt.Errorf("%w: rank(s) %v found transfer shapes that differ from what their peers state (their errors name both)", ErrShape, bad)
	}
	return nil
}

// shareVerdict tells every rank whether this one found a mismatch and
// returns the ranks that did, so that all ranks refuse the run together.
func shareVerdict(ctx context.Context, side Comm, step int, failed bool) ([]int, error) {
	me, n := side.Rank(), side.Size()
	v := []byte{0}
	if failed {
		v[0] = 1
	}
	tag := Tag{Kind: Control, Chunk: shapeChunk, Step: uint32(step), MicroBatch: 2}
	in := make([][]byte, n)
	var ops []Op
	for q := range n {
		if q != me {
			in[q] = make([]byte, 1)
			ops = append(ops, SendOp(q, tag, Bytes(v)), RecvOp(q, tag, Bytes(in[q])))
		}
	}
	if err := side.Batch(ops...).Wait(ctx); err != nil {
		return nil, err
	}
	var bad []int
	for q := range n {
		if q != me && in[q][0] != 0 {
			bad = append(bad, q)
		}
	}
	return bad, nil
}

// indexTransfers groups mine by peer, refusing a bad peer and one key with
// two shapes.
func indexTransfers(me, size int, mine []Transfer) ([][]Transfer, error) {
	byPeer := make([][]Transfer, size)
	seen := map[tkey]Transfer{}
	for _, t := range mine {
		if t.Peer < 0 || t.Peer >= size || t.Peer == me {
			return nil, fmt.Errorf("rank %d: shape check: peer %d out of range [0,%d) or this rank", me, t.Peer, size)
		}
		if len(t.Shape) > MaxDims || t.DType.Size() == 0 {
			return nil, fmt.Errorf("rank %d: shape check: %s%v is not a message shape", me, t.DType, t.Shape)
		}
		if old, ok := seen[t.key()]; ok {
			if old.DType != t.DType || !slices.Equal(old.Shape, t.Shape) {
				return nil, fmt.Errorf("%w: rank %d states %s two ways: %s%v and %s%v", ErrShape, me, describeTransfer(me, t), old.DType, old.Shape, t.DType, t.Shape)
			}
			continue
		}
		seen[t.key()] = t
		byPeer[t.Peer] = append(byPeer[t.Peer], t)
	}
	return byPeer, nil
}

// describeTransfer is "activation chunk=1 from rank 0 to rank 1" for
// transfer t of rank me.
func describeTransfer(me int, t Transfer) string {
	from, to := t.Peer, me
	if t.Send {
		from, to = me, t.Peer
	}
	return fmt.Sprintf("%s chunk=%d from rank %d to rank %d", t.Kind, t.Chunk, from, to)
}

// compareShapes compares, between me and q, my receives from q with q's
// sends to me, and q's sends to me with my receives; q's receives and my
// sends are q's to compare.
func compareShapes(me, q int, mine, theirs []Transfer) []error {
	recvs := map[tkey]Transfer{}
	for _, t := range mine {
		if !t.Send {
			recvs[tkey{false, q, t.Kind, t.Chunk}] = t
		}
	}
	var errs []error
	sent := map[tkey]bool{}
	for _, s := range theirs {
		if !s.Send {
			continue
		}
		k := tkey{false, q, s.Kind, s.Chunk}
		sent[k] = true
		r, ok := recvs[k]
		what := fmt.Sprintf("%s chunk=%d from rank %d to rank %d", s.Kind, s.Chunk, q, me)
		switch {
		case !ok:
			errs = append(errs, fmt.Errorf("%w: %s: rank %d sends %s%v but rank %d receives none", ErrShape, what, q, s.DType, s.Shape, me))
		case r.DType != s.DType || !slices.Equal(r.Shape, s.Shape):
			errs = append(errs, fmt.Errorf("%w: %s: rank %d sends %s%v but rank %d expects %s%v", ErrShape, what, q, s.DType, s.Shape, me, r.DType, r.Shape))
		}
	}
	for k, r := range recvs {
		if !sent[k] {
			errs = append(errs, fmt.Errorf("%w: %s chunk=%d from rank %d to rank %d: rank %d expects %s%v but rank %d sends none", ErrShape, r.Kind, r.Chunk, q, me, me, r.DType, r.Shape, q))
		}
	}
	slices.SortFunc(errs, func(a, b error) int { return strings.Compare(a.Error(), b.Error()) })
	return errs
}

// shapeChunk is the Chunk of the side channel's tags: no model has that many
// stages.
const shapeChunk = 0xffff

// exchangeShapes sends every other rank what this rank states about it, and
// receives what each states about this one: lengths first, then the lists.
func exchangeShapes(ctx context.Context, side Comm, step int, byPeer [][]Transfer) ([][]Transfer, error) {
	me, n := side.Rank(), side.Size()
	out := make([][]byte, n)
	lens := make([][]byte, n)
	in := make([][]byte, n)
	var ops []Op
	tag := Tag{Kind: Control, Chunk: shapeChunk, Step: uint32(step)}
	for q := range n {
		if q == me {
			continue
		}
		out[q] = encodeTransfers(byPeer[q])
		l := binary.LittleEndian.AppendUint64(nil, uint64(len(out[q])))
		lens[q] = make([]byte, 8)
		ops = append(ops, SendOp(q, tag, Bytes(l)), RecvOp(q, tag, Bytes(lens[q])))
	}
	if err := side.Batch(ops...).Wait(ctx); err != nil {
		return nil, err
	}
	ops = ops[:0]
	tag.MicroBatch = 1
	for q := range n {
		if q == me {
			continue
		}
		k := binary.LittleEndian.Uint64(lens[q])
		if k > 1<<24 {
			return nil, fmt.Errorf("rank %d states %d bytes of shapes: more than any pipeline has", q, k)
		}
		in[q] = make([]byte, k)
		ops = append(ops, SendOp(q, tag, Bytes(out[q])), RecvOp(q, tag, Bytes(in[q])))
	}
	if err := side.Batch(ops...).Wait(ctx); err != nil {
		return nil, err
	}
	theirs := make([][]Transfer, n)
	for q := range n {
		if q == me {
			continue
		}
		ts, err := decodeTransfers(in[q], me)
		if err != nil {
			return nil, fmt.Errorf("shapes from rank %d: %w", q, err)
		}
		theirs[q] = ts
	}
	return theirs, nil
}

// encodeTransfers writes ts as: count u32, then per transfer send u8, kind
// u8, chunk u16, dtype u8, ndim u8, dims u64 each (little endian). The peer
// is implied: the receiver.
func encodeTransfers(ts []Transfer) []byte {
	b := binary.LittleEndian.AppendUint32(nil, uint32(len(ts)))
	for _, t := range ts {
		s := byte(0)
		if t.Send {
			s = 1
		}
		b = append(b, s, byte(t.Kind))
		b = binary.LittleEndian.AppendUint16(b, t.Chunk)
		b = append(b, byte(t.DType), byte(len(t.Shape)))
		for _, d := range t.Shape {
			b = binary.LittleEndian.AppendUint64(b, uint64(d))
		}
	}
	return b
}

func decodeTransfers(b []byte, peer int) ([]Transfer, error) {
	bad := errors.New("corrupt shape list")
	if len(b) < 4 {
		return nil, bad
	}
	n := int(binary.LittleEndian.Uint32(b))
	b = b[4:]
	if n > len(b)/6 {
		return nil, bad
	}
	ts := make([]Transfer, 0, n)
	for range n {
		if len(b) < 6 {
			return nil, bad
		}
		t := Transfer{Send: b[0] == 1, Peer: peer, Kind: Kind(b[1]), Chunk: binary.LittleEndian.Uint16(b[2:]), DType: DType(b[4])}
		nd := int(b[5])
		b = b[6:]
		if nd > MaxDims || len(b) < 8*nd {
			return nil, bad
		}
		for i := range nd {
			d := binary.LittleEndian.Uint64(b[8*i:])
			if d > MaxPayload {
				return nil, bad
			}
			t.Shape = append(t.Shape, int(d))
		}
		b = b[8*nd:]
		ts = append(ts, t)
	}
	if len(b) != 0 {
		return nil, bad
	}
	return ts, nil
}
