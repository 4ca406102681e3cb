package models

import (
	"fmt"
	"math/bits"

	"github.com/pplaunch/pplaunch/models/tensor"
)

// Accumulator sums per-micro-batch gradient buffers in an order fixed by the
// global micro-batch index, whatever order they arrive in and however the
// micro-batches are spread over replicas.
//
// The order is a pairwise binary tree over the offsets 0..count-1 (offset =
// global index - first): node (level l, j) covers offsets [j·2^l, (j+1)·2^l);
// two siblings are added left + right as soon as both are complete, and a node
// whose sibling lies wholly past the end moves up unchanged. Arriving in index
// order, it holds at most ⌈log₂ count⌉+1 partial buffers (a binary counter).
//
// Because each replica's contiguous, power-of-two-aligned block of micro-batches
// is exactly one subtree, dp replicas with M micro-batches each (M a power of
// two), whose sums are then combined with TreeSum in replica order, give the
// same bits as one process accumulating dp·M micro-batches.
type Accumulator struct {
	be           tensor.Backend
	first, count int
	root         int                       // level of the root
	nodes        map[[2]int]*tensor.Tensor // complete nodes not yet merged
	seen         map[int]bool
	added        int
	free         func(*tensor.Tensor) // takes back merged-away buffers; may be nil
}

// NewAccumulator sums host buffers of micro-batches first..first+count-1 (for
// the CPU backend). free, if not nil, receives buffers the accumulator no
// longer needs.
func NewAccumulator(be tensor.Backend, first, count int, free func([]float32)) *Accumulator {
	var ft func(*tensor.Tensor)
	if free != nil {
		ft = func(t *tensor.Tensor) { free(t.Data) }
	}
	return NewTensorAccumulator(be, first, count, ft)
}

// NewTensorAccumulator is NewAccumulator for flat tensors of be (device
// memory for a device backend).
func NewTensorAccumulator(be tensor.Backend, first, count int, free func(*tensor.Tensor)) *Accumulator {
	root := 0
	if count > 1 {
		root = bits.Len(uint(count - 1))
	}
	return &Accumulator{be: be, first: first, count: count, root: root,
		nodes: map[[2]int]*tensor.Tensor{}, seen: map[int]bool{}, free: free}
}

// Add takes ownership of the host buffer g, the gradient of global micro-batch mb.
func (a *Accumulator) Add(mb int, g []float32) error {
	t, _ := tensor.From(g, len(g))
	return a.AddTensor(mb, t)
}

// AddTensor takes ownership of the flat tensor g, the gradient of global micro-batch mb.
func (a *Accumulator) AddTensor(mb int, g *tensor.Tensor) error {
	o := mb - a.first
	if o < 0 || o >= a.count {
		return fmt.Errorf("accumulate micro-batch %d: outside this step's micro-batches %d..%d", mb, a.first, a.first+a.count-1)
	}
	if a.seen[o] {
		return fmt.Errorf("accumulate micro-batch %d: added twice", mb)
	}
	if len(a.nodes) > 0 {
		for _, v := range a.nodes {
			if v.Len() != g.Len() {
				return fmt.Errorf("accumulate micro-batch %d: %d values, earlier buffers have %d", mb, g.Len(), v.Len())
			}
			break
		}
	}
	a.seen[o] = true
	a.added++
	l, j := 0, o
	for l < a.root {
		sib := j ^ 1
		if sib<<l >= a.count {
			l, j = l+1, j>>1 // nothing to the right at this level
			continue
		}
		other, ok := a.nodes[[2]int{l, sib}]
		if !ok {
			break
		}
		delete(a.nodes, [2]int{l, sib})
		left, right := other, g
		if j&1 == 0 {
			left, right = g, other
		}
		a.be.Add(left, left, right)
		if a.free != nil {
			a.free(right)
		}
		g = left
		l, j = l+1, j>>1
	}
	a.nodes[[2]int{l, j}] = g
	return nil
}

// Done reports whether every micro-batch has been added.
func (a *Accumulator) Done() bool { return a.added == a.count }

// Sum returns the total (a host buffer) once every micro-batch is in.
func (a *Accumulator) Sum() ([]float32, error) {
	t, err := a.SumTensor()
	if err != nil {
		return nil, err
	}
	return t.Data, nil
}

// SumTensor returns the total once every micro-batch is in.
func (a *Accumulator) SumTensor() (*tensor.Tensor, error) {
	if !a.Done() {
		var missing []int
		for o := range a.count {
			if !a.seen[o] {
				missing = append(missing, a.first+o)
			}
		}
		return nil, fmt.Errorf("gradient sum: micro-batches %v not accumulated", missing)
	}
	return a.nodes[[2]int{a.root, 0}], nil
}

// TreeSum adds host buffers in the same pairwise order the Accumulator uses,
// into parts[0]; data-parallel replicas' sums combined with it in replica order
// match one process accumulating all micro-batches.
func TreeSum(be tensor.Backend, parts [][]float32) ([]float32, error) {
	ts := make([]*tensor.Tensor, len(parts))
	for i, p := range parts {
		ts[i], _ = tensor.From(p, len(p))
	}
	sum, err := TreeSumTensors(be, ts)
	if err != nil {
		return nil, err
	}
	return sum.Data, nil
}

// TreeSumTensors is TreeSum for flat tensors of be, into parts[0].
func TreeSumTensors(be tensor.Backend, parts []*tensor.Tensor) (*tensor.Tensor, error) {
	if len(parts) == 0 {
		return nil, fmt.Errorf("tree sum of no buffers")
	}
	a := NewTensorAccumulator(be, 0, len(parts), nil)
	for i, p := range parts {
		if err := a.AddTensor(i, p); err != nil {
			return nil, err
		}
	}
	return a.SumTensor()
}
