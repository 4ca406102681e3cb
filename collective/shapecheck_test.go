package collective

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
)

// pipelineTransfers is what rank r of an n-rank pipeline states: it receives
// activations of shape act from r-1 and gradients from r+1 and sends the
// same on; wrong (rank, shape) overrides one receive's shape.
func pipelineTransfers(r, n int, act []int) []Transfer {
	var ts []Transfer
	if r > 0 {
		ts = append(ts,
			Transfer{Peer: r - 1, Kind: Activation, Chunk: uint16(r), DType: Float32, Shape: act},
			Transfer{Send: true, Peer: r - 1, Kind: Gradient, Chunk: uint16(r - 1), DType: Float32, Shape: act})
	}
	if r < n-1 {
		ts = append(ts,
			Transfer{Send: true, Peer: r + 1, Kind: Activation, Chunk: uint16(r + 1), DType: Float32, Shape: act},
			Transfer{Peer: r + 1, Kind: Gradient, Chunk: uint16(r), DType: Float32, Shape: act})
	}
	return ts
}

// checkAll runs CheckShapes on every rank with its transfers and returns
// each rank's error.
func checkAll(cs []Comm, step int, mine func(r int) []Transfer) []error {
	errs := make([]error, len(cs))
	var wg sync.WaitGroup
	for r, c := range cs {
		wg.Go(func() { errs[r] = CheckShapes(context.Background(), c, step, mine(r)) })
	}
	wg.Wait()
	return errs
}

// TestCheckShapesAgree: a consistent pipeline passes on both backends, for
// every world size, twice (as per-step checks run).
func TestCheckShapesAgree(t *testing.T) {
	forEach(t, []int{1, 2, 3, 5}, func(t *testing.T, b backend, n int) {
		cs := b.world(t, n, Options{})
		for step := range 2 {
			for r, err := range checkAll(cs, step, func(r int) []Transfer { return pipelineTransfers(r, n, []int{4, 8, 16}) }) {
				if err != nil {
					t.Errorf("step %d rank %d: %v", step, r, err)
				}
			}
		}
	})
}

// TestCheckShapesMismatch: rank 1 expects a different activation shape from
// rank 0 than rank 0 sends. Rank 1 refuses, naming both ranks and shapes;
// the other ranks refuse too, naming rank 1. The channel stays usable.
func TestCheckShapesMismatch(t *testing.T) {
	forEach(t, []int{3}, func(t *testing.T, b backend, n int) {
		cs := b.world(t, n, Options{})
		errs := checkAll(cs, 0, func(r int) []Transfer {
			ts := pipelineTransfers(r, n, []int{4, 8, 16})
			if r == 1 {
				ts[0].Shape = []int{4, 8, 32}
			}
			return ts
		})
		want := "activation chunk=1 from rank 0 to rank 1: rank 0 sends float32[4 8 16] but rank 1 expects float32[4 8 32]"
		if errs[1] == nil || !errors.Is(errs[1], ErrShape) || !strings.Contains(errs[1].Error(), want) {
			t.Fatalf("rank 1: %v, want %q", errs[1], want)
		}
		for _, r := range []int{0, 2} {
			if errs[r] == nil || !errors.Is(errs[r], ErrShape) || !strings.Contains(errs[r].Error(), "rank(s) [1] found transfer shapes that differ") {
				t.Errorf("rank %d: %v, want it to name rank 1", r, errs[r])
			}
		}
		for r, err := range checkAll(cs, 1, func(r int) []Transfer { return pipelineTransfers(r, n, []int{2}) }) {
			if err != nil {
				t.Errorf("after a mismatch, rank %d: %v", r, err)
			}
		}
	})
}

// TestCheckShapesMissing: a send nobody receives, a receive nobody sends,
// and a dtype difference are each named.
func TestCheckShapesMissing(t *testing.T) {
	forEach(t, []int{2}, func(t *testing.T, b backend, n int) {
		cs := b.world(t, n, Options{})
		errs := checkAll(cs, 0, func(r int) []Transfer {
			if r == 0 {
				return []Transfer{
					{Send: true, Peer: 1, Kind: Activation, Chunk: 1, DType: Float32, Shape: []int{3}},
					{Send: true, Peer: 1, Kind: Data, Chunk: 0, DType: Float64, Shape: []int{2}},
				}
			}
			return []Transfer{
				{Peer: 0, Kind: Gradient, Chunk: 0, DType: Float32, Shape: []int{5}},
				{Peer: 0, Kind: Data, Chunk: 0, DType: Float32, Shape: []int{2}},
			}
		})
		for _, want := range []string{
			"activation chunk=1 from rank 0 to rank 1: rank 0 sends float32[3] but rank 1 receives none",
			"gradient chunk=0 from rank 0 to rank 1: rank 1 expects float32[5] but rank 0 sends none",
			"data chunk=0 from rank 0 to rank 1: rank 0 sends float64[2] but rank 1 expects float32[2]",
		} {
			if errs[1] == nil || !strings.Contains(errs[1].Error(), want) {
				t.Errorf("rank 1: %v\nlacks %q", errs[1], want)
			}
		}
	})
}

// TestCheckShapesBadInput: a rank's own list is refused before any message
// when it names itself or states one transfer two ways.
func TestCheckShapesBadInput(t *testing.T) {
	cs := memoryWorld(t, 2, Options{})
	for _, c := range []struct {
		ts   []Transfer
		want string
	}{
		{[]Transfer{{Peer: 0, Kind: Data, DType: Float32}}, "peer 0 out of range [0,2) or this rank"},
		{[]Transfer{{Peer: 3, Kind: Data, DType: Float32}}, "peer 3 out of range"},
		{[]Transfer{{Peer: 1, Kind: Data, DType: Float32, Shape: []int{2}}, {Peer: 1, Kind: Data, DType: Float32, Shape: []int{3}}},
			"rank 0 states data chunk=0 from rank 1 to rank 0 two ways: float32[2] and float32[3]"},
	} {
		err := CheckShapes(context.Background(), cs[0], 0, c.ts)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: got %v, want %q", c.ts, err, c.want)
		}
	}
}

// TestDecodeTransfersCorrupt: truncated or oversized lists are refused.
func TestDecodeTransfersCorrupt(t *testing.T) {
	good := encodeTransfers([]Transfer{{Send: true, Kind: Activation, Chunk: 2, DType: Float32, Shape: []int{4, 8}}})
	if ts, err := decodeTransfers(good, 1); err != nil || len(ts) != 1 || ts[0].Shape[1] != 8 || ts[0].Peer != 1 {
		t.Fatalf("round trip: %v %v", ts, err)
	}
	for i := range len(good) {
		if _, err := decodeTransfers(good[:i], 1); err == nil {
			t.Errorf("truncated to %d bytes: accepted", i)
		}
	}
	if _, err := decodeTransfers(append(good, 0), 1); err == nil {
		t.Error("trailing byte accepted")
	}
}
