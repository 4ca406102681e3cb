package safetensors

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"sort"
	"strconv"
	"unicode/utf8"
)

// DType is a safetensors element type, spelled as in the header ("F32", "BF16", ...).
type DType string

// The element types of the format. Float32s, Float64s and Int64s convert the common
// ones; the rest are read and written as raw bytes.
const (
	BOOL    DType = "BOOL"
	U8      DType = "U8"
	I8      DType = "I8"
	F8E5M2  DType = "F8_E5M2"
	F8E4M3  DType = "F8_E4M3"
	I16     DType = "I16"
	U16     DType = "U16"
	F16     DType = "F16"
	BF16    DType = "BF16"
	I32     DType = "I32"
	U32     DType = "U32"
	F32     DType = "F32"
	F64     DType = "F64"
	I64     DType = "I64"
	U64     DType = "U64"
	metaKey       = "__metadata__"
)

var dtypeSizes = map[DType]int{
	BOOL: 1, U8: 1, I8: 1, F8E5M2: 1, F8E4M3: 1,
	I16: 2, U16: 2, F16: 2, BF16: 2,
	I32: 4, U32: 4, F32: 4,
	F64: 8, I64: 8, U64: 8,
}

// Size is the element size in bytes, or 0 for an unknown dtype.
func (d DType) Size() int { return dtypeSizes[d] }

// MaxHeaderLen bounds the JSON header, as the reference implementation does (100 MB).
const MaxHeaderLen = 100_000_000

// Tensor is one named tensor: its element type, shape (row-major) and little-endian
// bytes. Tensors returned by Decode share Data with the decoded buffer.
type Tensor struct {
	Name  string
	DType DType
	Shape []int
	Data  []byte
}

// Elements is the number of elements the shape holds (1 for a scalar shape []).
func (t Tensor) Elements() int {
	n := 1
	for _, d := range t.Shape {
		n *= d
	}
	return n
}

// File is a decoded safetensors file: its tensors sorted by name and its metadata.
type File struct {
	Metadata map[string]string
	Tensors  []Tensor
}

// Get returns the tensor with the given name.
func (f *File) Get(name string) (Tensor, bool) {
	i, ok := slices.BinarySearchFunc(f.Tensors, name, func(t Tensor, n string) int {
		switch {
		case t.Name < n:
			return -1
		case t.Name > n:
			return 1
		}
		return 0
	})
	if !ok {
		return Tensor{}, false
	}
	return f.Tensors[i], true
}

// FromFloat32 makes an F32 tensor holding a copy of v.
func FromFloat32(name string, shape []int, v []float32) Tensor {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return Tensor{Name: name, DType: F32, Shape: slices.Clone(shape), Data: b}
}

// FromFloat64 makes an F64 tensor holding a copy of v.
func FromFloat64(name string, shape []int, v []float64) Tensor {
	b := make([]byte, 8*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint64(b[8*i:], math.Float64bits(x))
	}
	return Tensor{Name: name, DType: F64, Shape: slices.Clone(shape), Data: b}
}

// FromInt32 makes an I32 tensor holding a copy of v.
func FromInt32(name string, shape []int, v []int32) Tensor {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], uint32(x))
	}
	return Tensor{Name: name, DType: I32, Shape: slices.Clone(shape), Data: b}
}

// FromInt64 makes an I64 tensor holding a copy of v.
func FromInt64(name string, shape []int, v []int64) Tensor {
	b := make([]byte, 8*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint64(b[8*i:], uint64(x))
	}
	return Tensor{Name: name, DType: I64, Shape: slices.Clone(shape), Data: b}
}

// Float32s converts an F32, F64 (rounded to nearest), F16 or BF16 tensor to float32.
func (t Tensor) Float32s() ([]float32, error) {
	if err := t.checkLen(); err != nil {
		return nil, err
	}
	out := make([]float32, t.Elements())
	le := binary.LittleEndian
	switch t.DType {
	case F32:
		for i := range out {
			out[i] = math.Float32frombits(le.Uint32(t.Data[4*i:]))
		}
	case F64:
		for i := range out {
			out[i] = float32(math.Float64frombits(le.Uint64(t.Data[8*i:])))
		}
	case F16:
		for i := range out {
			out[i] = HalfToFloat32(le.Uint16(t.Data[2*i:]))
		}
	case BF16:
		for i := range out {
			out[i] = math.Float32frombits(uint32(le.Uint16(t.Data[2*i:])) << 16)
		}
	default:
		return nil, fmt.Errorf("tensor %q: cannot convert %s to float32", t.Name, t.DType)
	}
	return out, nil
}

// Float64s converts an F64, F32, F16 or BF16 tensor to float64 (exactly).
func (t Tensor) Float64s() ([]float64, error) {
	if t.DType == F64 {
		if err := t.checkLen(); err != nil {
			return nil, err
		}
		out := make([]float64, t.Elements())
		for i := range out {
			out[i] = math.Float64frombits(binary.LittleEndian.Uint64(t.Data[8*i:]))
		}
		return out, nil
	}
	if t.DType != F32 && t.DType != F16 && t.DType != BF16 {
		return nil, fmt.Errorf("tensor %q: cannot convert %s to float64", t.Name, t.DType)
	}
	f, err := t.Float32s() // exact for these types
	if err != nil {
		return nil, err
	}
	out := make([]float64, len(f))
	for i, x := range f {
		out[i] = float64(x)
	}
	return out, nil
}

// Int64s converts an I64 or I32 tensor to int64.
func (t Tensor) Int64s() ([]int64, error) {
	if err := t.checkLen(); err != nil {
		return nil, err
	}
	out := make([]int64, t.Elements())
	switch t.DType {
	case I64:
		for i := range out {
			out[i] = int64(binary.LittleEndian.Uint64(t.Data[8*i:]))
		}
	case I32:
		for i := range out {
			out[i] = int64(int32(binary.LittleEndian.Uint32(t.Data[4*i:])))
		}
	default:
		return nil, fmt.Errorf("tensor %q: cannot convert %s to int64", t.Name, t.DType)
	}
	return out, nil
}

// HalfToFloat32 converts an IEEE 754 binary16 value (F16) to float32, exactly,
// including subnormals, infinities and NaNs.
func HalfToFloat32(h uint16) float32 {
	sign := uint32(h>>15) << 31
	exp := uint32(h>>10) & 0x1f
	frac := uint32(h) & 0x3ff
	switch {
	case exp == 0x1f: // Inf or NaN
		return math.Float32frombits(sign | 0xff<<23 | frac<<13)
	case exp != 0: // normal
		return math.Float32frombits(sign | (exp+127-15)<<23 | frac<<13)
	case frac == 0: // ±0
		return math.Float32frombits(sign)
	}
	// Subnormal: frac × 2^-24, exact in float32.
	v := float32(frac) * (1.0 / (1 << 24))
	if sign != 0 {
		v = -v
	}
	return v
}

// checkLen verifies the shape against the data, for tensors built by hand.
func (t Tensor) checkLen() error {
	size := t.DType.Size()
	if size == 0 {
		return fmt.Errorf("tensor %q: unknown dtype %q", t.Name, t.DType)
	}
	n, err := elements(t.Shape, uint64(len(t.Data)))
	if err != nil {
		return fmt.Errorf("tensor %q: %w", t.Name, err)
	}
	if n*uint64(size) != uint64(len(t.Data)) {
		return fmt.Errorf("tensor %q: shape %v of %s needs %d bytes, has %d", t.Name, t.Shape, t.DType, n*uint64(size), len(t.Data))
	}
	return nil
}

// elements multiplies the dims, refusing negative dims and any product above limit
// (a shape that cannot fit the bytes available), so nothing overflows.
func elements(shape []int, limit uint64) (uint64, error) {
	n := uint64(1)
	for _, d := range shape {
		if d < 0 {
			return 0, fmt.Errorf("negative dimension in shape %v", shape)
		}
		if d == 0 {
			return 0, nil
		}
	}
	for _, d := range shape {
		if n > limit/uint64(d) {
			return 0, fmt.Errorf("shape %v holds more elements than the %d bytes available", shape, limit)
		}
		n *= uint64(d)
	}
	return n, nil
}

// layout validates tensors for writing and orders them as they are laid out.
func layout(tensors []Tensor) ([]Tensor, error) {
	ts := slices.Clone(tensors)
	seen := make(map[string]bool, len(ts))
	for _, t := range ts {
		switch {
		case t.Name == "" || t.Name == metaKey:
			return nil, fmt.Errorf("safetensors: invalid tensor name %q", t.Name)
		case !utf8.ValidString(t.Name):
			return nil, fmt.Errorf("safetensors: tensor name %q is not valid UTF-8", t.Name)
		case seen[t.Name]:
			return nil, fmt.Errorf("safetensors: duplicate tensor name %q", t.Name)
		}
		seen[t.Name] = true
		if err := t.checkLen(); err != nil {
			return nil, fmt.Errorf("safetensors: %w", err)
		}
	}
	sort.Slice(ts, func(i, j int) bool {
		si, sj := ts[i].DType.Size(), ts[j].DType.Size()
		if si != sj {
			return si > sj
		}
		return ts[i].Name < ts[j].Name
	})
	return ts, nil
}

// header builds the padded JSON header for tensors already in layout order.
func header(ts []Tensor, metadata map[string]string) ([]byte, error) {
	var h bytes.Buffer
	h.WriteByte('{')
	if len(metadata) > 0 {
		m, err := json.Marshal(metadata) // sorts keys
		if err != nil {
			return nil, fmt.Errorf("safetensors: metadata: %w", err)
		}
		h.WriteString(strconv.Quote(metaKey) + ":")
		h.Write(m)
	}
	var off uint64
	for i, t := range ts {
		name, err := json.Marshal(t.Name)
		if err != nil {
			return nil, err
		}
		if i > 0 || len(metadata) > 0 {
			h.WriteByte(',')
		}
		h.Write(name)
		shape := t.Shape
		if shape == nil {
			shape = []int{}
		}
		s, _ := json.Marshal(shape)
		end := off + uint64(len(t.Data))
		fmt.Fprintf(&h, `:{"dtype":%q,"shape":%s,"data_offsets":[%d,%d]}`, t.DType, s, off, end)
		off = end
	}
	h.WriteByte('}')
	for h.Len()%8 != 0 {
		h.WriteByte(' ')
	}
	if h.Len() > MaxHeaderLen {
		return nil, fmt.Errorf("safetensors: header of %d bytes exceeds %d", h.Len(), MaxHeaderLen)
	}
	return h.Bytes(), nil
}

// Encode writes tensors and metadata (may be nil) in the safetensors format.
func Encode(w io.Writer, tensors []Tensor, metadata map[string]string) error {
	ts, err := layout(tensors)
	if err != nil {
		return err
	}
	h, err := header(ts, metadata)
	if err != nil {
		return err
	}
	bw := bufio.NewWriterSize(w, 1<<20)
	var n [8]byte
	binary.LittleEndian.PutUint64(n[:], uint64(len(h)))
	bw.Write(n[:])
	bw.Write(h)
	for _, t := range ts {
		bw.Write(t.Data)
	}
	return bw.Flush() // bufio keeps the first write error
}

// Marshal returns the safetensors encoding of tensors and metadata (may be nil).
func Marshal(tensors []Tensor, metadata map[string]string) ([]byte, error) {
	var b bytes.Buffer
	if err := Encode(&b, tensors, metadata); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// WriteFile writes a safetensors file (not atomically: package checkpoint does that).
func WriteFile(path string, tensors []Tensor, metadata map[string]string) error {
	b, err := Marshal(tensors, metadata)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return os.WriteFile(path, b, 0o644)
}
