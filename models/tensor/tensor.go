package tensor

import (
	"fmt"
	"slices"
)

// Tensor is a dense row-major float32 array. The CPU backend computes on Data
// directly; shapes are checked by every operation.
type Tensor struct {
	Shape []int
	Data  []float32
}

// New returns a zeroed tensor of the given shape.
func New(shape ...int) *Tensor {
	return &Tensor{Shape: slices.Clone(shape), Data: make([]float32, numel(shape))}
}

// From wraps data (not copied) as a tensor of the given shape; the lengths must agree.
func From(data []float32, shape ...int) (*Tensor, error) {
	if n := numel(shape); n != len(data) {
		return nil, fmt.Errorf("tensor: %d values do not fill shape %v (%d)", len(data), shape, n)
	}
	return &Tensor{Shape: slices.Clone(shape), Data: data}, nil
}

func numel(shape []int) int {
	n := 1
	for _, d := range shape {
		if d < 0 {
			panic(fmt.Sprintf("tensor: negative dimension in shape %v", shape))
		}
		n *= d
	}
	return n
}

// Len is the number of elements.
func (t *Tensor) Len() int { return len(t.Data) }

// Bytes is the size of the data in bytes.
func (t *Tensor) Bytes() int64 { return int64(len(t.Data)) * 4 }

// Clone returns a deep copy.
func (t *Tensor) Clone() *Tensor {
	return &Tensor{Shape: slices.Clone(t.Shape), Data: slices.Clone(t.Data)}
}

// Rows views the tensor as a matrix: the product of all but the last dimension,
// by the last dimension.
func (t *Tensor) Rows() (rows, cols int) {
	if len(t.Shape) == 0 {
		return 1, 1
	}
	cols = t.Shape[len(t.Shape)-1]
	if cols == 0 {
		return 0, 0
	}
	return len(t.Data) / cols, cols
}

func (t *Tensor) String() string { return fmt.Sprintf("tensor%v", t.Shape) }
