package tensor

import (
	"fmt"
	"slices"
)

// Tensor is a dense row-major array whose storage belongs to the backend that
// made it: host memory for the CPU backend (and for tensors made by New, NewAs
// and From), in Data for float32 and in Half for bfloat16, or device memory
// for the CUDA backend, in which case both are nil. Code outside a backend
// reads and writes values only through the backend (Upload, Download, Copy and
// the operations, which convert between dtypes); shapes and dtypes are checked
// by every operation.
type Tensor struct {
	Shape []int
	Data  []float32
	Half  []uint16    // a host bfloat16 tensor's values (the top halves of float32s)
	dev   *devStorage // device storage; nil for a host tensor
	dtype DType
}

// New returns a zeroed host float32 tensor of the given shape.
func New(shape ...int) *Tensor {
	return &Tensor{Shape: slices.Clone(shape), Data: make([]float32, numel(shape))}
}

// NewAs returns a zeroed host tensor of the dtype and shape.
func NewAs(dt DType, shape ...int) *Tensor {
	if dt == BFloat16 {
		return &Tensor{Shape: slices.Clone(shape), Half: make([]uint16, numel(shape)), dtype: BFloat16}
	}
	return New(shape...)
}

// DType is how t stores its values.
func (t *Tensor) DType() DType { return t.dtype }

// From wraps data (not copied) as a host tensor of the given shape; the lengths must agree.
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
func (t *Tensor) Len() int {
	if t.dev != nil {
		return t.dev.n
	}
	if t.dtype == BFloat16 {
		return len(t.Half)
	}
	return len(t.Data)
}

// Bytes is the size of the data in bytes.
func (t *Tensor) Bytes() int64 { return int64(t.Len()) * int64(t.dtype.Size()) }

// OnHost reports whether the tensor's values live in host memory (Data).
func (t *Tensor) OnHost() bool { return t.dev == nil }

// Clone returns a deep copy of a host tensor (a device tensor is copied with
// its backend's Alloc and Copy).
func (t *Tensor) Clone() *Tensor {
	if t.dev != nil {
		panic(fmt.Sprintf("tensor: Clone of device tensor %v (use the backend's Alloc and Copy)", t.Shape))
	}
	return &Tensor{Shape: slices.Clone(t.Shape), Data: slices.Clone(t.Data), Half: slices.Clone(t.Half), dtype: t.dtype}
}

// View is the elements [off, off+numel(shape)) of t as a tensor of the given
// shape, sharing t's storage (host or device): writes through either are seen by
// both. It is header arithmetic only, the same for every backend.
func (t *Tensor) View(off int, shape ...int) *Tensor {
	n := numel(shape)
	if off < 0 || off+n > t.Len() {
		panic(fmt.Sprintf("tensor: view [%d,%d) of %v (%d elements)", off, off+n, t.Shape, t.Len()))
	}
	v := &Tensor{Shape: slices.Clone(shape), dtype: t.dtype}
	switch {
	case t.dev != nil:
		v.dev = t.dev.view(off, n)
	case t.dtype == BFloat16:
		v.Half = t.Half[off : off+n : off+n]
	default:
		v.Data = t.Data[off : off+n : off+n]
	}
	return v
}

// Reshape is the whole of t under another shape with as many elements.
func (t *Tensor) Reshape(shape ...int) *Tensor {
	if numel(shape) != t.Len() {
		panic(fmt.Sprintf("tensor: reshape %v (%d elements) to %v", t.Shape, t.Len(), shape))
	}
	return t.View(0, shape...)
}

// Detach drops t's reference to its storage (after the storage went back to
// an allocator), so that a later use fails loudly instead of reading another
// tensor's values.
func (t *Tensor) Detach() { t.Data, t.Half, t.dev = nil, nil, nil }

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
	return t.Len() / cols, cols
}

func (t *Tensor) String() string {
	if t.dtype != Float32 {
		return fmt.Sprintf("tensor%v %v", t.Shape, t.dtype)
	}
	return fmt.Sprintf("tensor%v", t.Shape)
}
