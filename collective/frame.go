package collective

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"
	"slices"
	"unsafe"
)

// DType is the element type of a message payload.
type DType uint8

const (
	// Uint8 is raw bytes (control messages, tokens, serialized data).
	Uint8 DType = iota + 1
	Float32
	Float64
	// BFloat16 is the top half of a float32: pipeline activations and
	// their gradients in bf16 training, two bytes an element on the wire.
	BFloat16
)

// Size returns the size of one element in bytes, or 0 for an unknown type.
func (d DType) Size() int {
	switch d {
	case Uint8:
		return 1
	case Float32:
		return 4
	case Float64:
		return 8
	case BFloat16:
		return 2
	}
	return 0
}

func (d DType) String() string {
	switch d {
	case Uint8:
		return "uint8"
	case Float32:
		return "float32"
	case Float64:
		return "float64"
	case BFloat16:
		return "bfloat16"
	}
	return fmt.Sprintf("dtype(%d)", uint8(d))
}

// Kind says what a message carries. Kinds below KindReserved are the
// application's; the rest are used by the communicator itself.
type Kind uint8

const (
	// Data is a generic application message.
	Data Kind = iota
	// Activation is a forward activation between pipeline stages.
	Activation
	// Gradient is a backward gradient between pipeline stages.
	Gradient
	// Control is a small application control message.
	Control

	// KindReserved is the first kind the communicator keeps for itself.
	KindReserved Kind = 200

	kindCollective Kind = 200 // segments of all-reduce, broadcast, barrier
	kindBye        Kind = 255 // a rank is closing its communicator
)

func (k Kind) String() string {
	switch k {
	case Data:
		return "data"
	case Activation:
		return "activation"
	case Gradient:
		return "gradient"
	case Control:
		return "control"
	case kindCollective:
		return "collective"
	case kindBye:
		return "bye"
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// Tag identifies a message between two ranks: what it is (Kind), the model
// chunk (virtual stage) it belongs to, the training step and the micro-batch.
// Messages between the same pair of ranks with the same tag are delivered in
// the order they were sent.
type Tag struct {
	Kind       Kind
	Chunk      uint16
	Step       uint32
	MicroBatch uint32
}

func (t Tag) String() string {
	if t.Kind == kindCollective { // see collTag
		return fmt.Sprintf("collective call=%d phase=%d step=%d segment=%d", t.Step, t.MicroBatch>>28, t.Chunk, t.MicroBatch&(1<<28-1))
	}
	return fmt.Sprintf("%s chunk=%d step=%d mb=%d", t.Kind, t.Chunk, t.Step, t.MicroBatch)
}

// MaxDims is the largest number of dimensions a message shape may have.
const MaxDims = 8

// MaxPayload is the largest payload one message may carry (64 GiB).
const MaxPayload = 1 << 36

// header is the fixed part of a frame on the wire, little endian:
//
//	0  magic   "PPM1"
//	4  kind    u8
//	5  dtype   u8
//	6  ndim    u8
//	7  flags   u8 (must be 0)
//	8  group   u32   sub-group the message belongs to (0: the world)
//	12 chunk   u16
//	14 pad     u16 (must be 0)
//	16 step    u32
//	20 mb      u32
//	24 nbytes  u64   payload length
//	32 dims    ndim × u64
const (
	headerFixed = 32
	headerMax   = headerFixed + 8*MaxDims
)

var frameMagic = [4]byte{'P', 'P', 'M', '1'}

// header is one decoded frame header.
type header struct {
	tag    Tag
	group  uint32
	dtype  DType
	ndim   int
	dims   [MaxDims]int
	nbytes int
}

// shape returns the dimensions as a slice (aliasing h).
func (h *header) shape() []int { return h.dims[:h.ndim] }

// encodeHeader writes h into b (len ≥ headerMax) and returns the frame header length.
func encodeHeader(b []byte, h *header) int {
	copy(b[0:4], frameMagic[:])
	b[4] = byte(h.tag.Kind)
	b[5] = byte(h.dtype)
	b[6] = byte(h.ndim)
	b[7] = 0
	binary.LittleEndian.PutUint32(b[8:], h.group)
	binary.LittleEndian.PutUint16(b[12:], h.tag.Chunk)
	binary.LittleEndian.PutUint16(b[14:], 0)
	binary.LittleEndian.PutUint32(b[16:], h.tag.Step)
	binary.LittleEndian.PutUint32(b[20:], h.tag.MicroBatch)
	binary.LittleEndian.PutUint64(b[24:], uint64(h.nbytes))
	for i := 0; i < h.ndim; i++ {
		binary.LittleEndian.PutUint64(b[headerFixed+8*i:], uint64(h.dims[i]))
	}
	return headerFixed + 8*h.ndim
}

var errShortHeader = errors.New("short frame header")

// decodeHeader parses a frame header from b. It returns the header and its
// length on the wire, errShortHeader if b holds less than a whole header, or an
// error saying which field is corrupt. It never panics on any input.
func decodeHeader(b []byte) (header, int, error) {
	var h header
	if len(b) < headerFixed {
		return h, 0, errShortHeader
	}
	if [4]byte(b[0:4]) != frameMagic {
		return h, 0, fmt.Errorf("bad frame magic %q (want %q)", b[0:4], frameMagic[:])
	}
	h.tag.Kind = Kind(b[4])
	h.dtype = DType(b[5])
	if h.dtype.Size() == 0 {
		return h, 0, fmt.Errorf("unknown dtype %d", b[5])
	}
	h.ndim = int(b[6])
	if h.ndim > MaxDims {
		return h, 0, fmt.Errorf("frame has %d dims (max %d)", h.ndim, MaxDims)
	}
	if b[7] != 0 || b[14] != 0 || b[15] != 0 {
		return h, 0, errors.New("reserved frame header bytes are not zero")
	}
	h.group = binary.LittleEndian.Uint32(b[8:])
	h.tag.Chunk = binary.LittleEndian.Uint16(b[12:])
	h.tag.Step = binary.LittleEndian.Uint32(b[16:])
	h.tag.MicroBatch = binary.LittleEndian.Uint32(b[20:])
	nbytes := binary.LittleEndian.Uint64(b[24:])
	if nbytes > MaxPayload {
		return h, 0, fmt.Errorf("frame payload of %d bytes exceeds the limit of %d", nbytes, uint64(MaxPayload))
	}
	n := headerFixed + 8*h.ndim
	if len(b) < n {
		return h, 0, errShortHeader
	}
	elems := uint64(1)
	for i := 0; i < h.ndim; i++ {
		d := binary.LittleEndian.Uint64(b[headerFixed+8*i:])
		hi, lo := bits.Mul64(elems, d)
		if hi != 0 || lo > MaxPayload || d > MaxPayload {
			return h, 0, fmt.Errorf("frame shape dim %d = %d is too large", i, d)
		}
		elems = lo
		h.dims[i] = int(d)
	}
	if elems*uint64(h.dtype.Size()) != nbytes {
		return h, 0, fmt.Errorf("frame payload is %d bytes but shape %v of %s needs %d",
			nbytes, slices.Clone(h.shape()), h.dtype, elems*uint64(h.dtype.Size()))
	}
	h.nbytes = int(nbytes)
	return h, n, nil
}

// Buffer is a tensor's data and shape as the communicator sees it. Exactly one
// of the data slices is set, matching DType. The communicator reads (send) or
// writes (receive) the data in place; it never keeps a Buffer after the
// operation completes.
type Buffer struct {
	DType DType
	Shape []int
	F32   []float32
	F64   []float64
	U8    []byte
	U16   []uint16 // bfloat16 values
	// Device is data in GPU memory, for the backends that move it (NCCL);
	// the host backends (TCP, memory) refuse it: stage such tensors through
	// host memory for them.
	Device DeviceMem
}

// DeviceMem is a buffer's data in device memory: its address (a
// cbits.DevPtr) and its element count. The zero value is none.
type DeviceMem struct {
	Ptr uintptr
	Len int
}

// OnDevice wraps device data of dtype at ptr holding n elements, of the
// given shape (one-dimensional when none is given).
func OnDevice(dtype DType, ptr uintptr, n int, shape ...int) Buffer {
	if len(shape) == 0 {
		shape = []int{n}
	}
	return Buffer{DType: dtype, Shape: shape, Device: DeviceMem{Ptr: ptr, Len: n}}
}

// IsDevice reports whether b's data is in device memory.
func (b Buffer) IsDevice() bool { return b.Device.Ptr != 0 }

// F32 wraps float32 data. With no shape it is one-dimensional.
func F32(data []float32, shape ...int) Buffer {
	if len(shape) == 0 {
		shape = []int{len(data)}
	}
	return Buffer{DType: Float32, Shape: shape, F32: data}
}

// F64 wraps float64 data. With no shape it is one-dimensional.
func F64(data []float64, shape ...int) Buffer {
	if len(shape) == 0 {
		shape = []int{len(data)}
	}
	return Buffer{DType: Float64, Shape: shape, F64: data}
}

// BF16 wraps bfloat16 data (the top halves of float32s). With no shape it
// is one-dimensional.
func BF16(data []uint16, shape ...int) Buffer {
	if len(shape) == 0 {
		shape = []int{len(data)}
	}
	return Buffer{DType: BFloat16, Shape: shape, U16: data}
}

// Bytes wraps raw bytes as a one-dimensional uint8 buffer.
func Bytes(data []byte) Buffer {
	return Buffer{DType: Uint8, Shape: []int{len(data)}, U8: data}
}

// Len returns the number of elements in the data slice (or device memory).
func (b Buffer) Len() int {
	if b.IsDevice() {
		return b.Device.Len
	}
	switch b.DType {
	case Float32:
		return len(b.F32)
	case Float64:
		return len(b.F64)
	case Uint8:
		return len(b.U8)
	case BFloat16:
		return len(b.U16)
	}
	return 0
}

// bytes returns the data as bytes, aliasing it (no copy).
func (b Buffer) bytes() []byte {
	switch b.DType {
	case Float32:
		if len(b.F32) == 0 {
			return nil
		}
		return unsafe.Slice((*byte)(unsafe.Pointer(&b.F32[0])), 4*len(b.F32))
	case Float64:
		if len(b.F64) == 0 {
			return nil
		}
		return unsafe.Slice((*byte)(unsafe.Pointer(&b.F64[0])), 8*len(b.F64))
	case BFloat16:
		if len(b.U16) == 0 {
			return nil
		}
		return unsafe.Slice((*byte)(unsafe.Pointer(&b.U16[0])), 2*len(b.U16))
	}
	return b.U8
}

// check validates that the data slice matches DType and Shape, for the host
// backends: device memory is refused.
func (b Buffer) check() error {
	if b.IsDevice() {
		return errors.New("buffer is in device memory, which this backend cannot reach: stage it through host memory, or use the nccl backend")
	}
	return b.checkShape()
}

// checkDevice validates a device buffer, for the NCCL backend.
func (b Buffer) checkDevice() error {
	if !b.IsDevice() {
		return errors.New("buffer is in host memory: the nccl backend moves device memory only (upload it first)")
	}
	if b.F32 != nil || b.F64 != nil || b.U8 != nil || b.U16 != nil {
		return errors.New("buffer has both device memory and a host data slice set")
	}
	return b.checkShape()
}

func (b Buffer) checkShape() error {
	if b.DType.Size() == 0 {
		return fmt.Errorf("buffer has unknown dtype %d", uint8(b.DType))
	}
	set := 0
	for _, ok := range []bool{b.F32 != nil, b.F64 != nil, b.U8 != nil, b.U16 != nil} {
		if ok {
			set++
		}
	}
	if set > 1 {
		return errors.New("buffer has more than one data slice set")
	}
	if len(b.Shape) > MaxDims {
		return fmt.Errorf("buffer shape %v has more than %d dims", b.Shape, MaxDims)
	}
	n := 1
	for _, d := range b.Shape {
		if d < 0 {
			return fmt.Errorf("buffer shape %v has a negative dim", b.Shape)
		}
		n *= d
	}
	if n != b.Len() {
		return fmt.Errorf("buffer shape %v holds %d elements but its %s data has %d", b.Shape, n, b.DType, b.Len())
	}
	return nil
}

// slice returns elements [lo, hi) as a one-dimensional buffer aliasing b.
func (b Buffer) slice(lo, hi int) Buffer {
	switch b.DType {
	case Float32:
		return F32(b.F32[lo:hi:hi])
	case Float64:
		return F64(b.F64[lo:hi:hi])
	case BFloat16:
		return BF16(b.U16[lo:hi:hi])
	}
	return Bytes(b.U8[lo:hi:hi])
}

// headerFor builds the header of a message carrying b.
func headerFor(group uint32, tag Tag, b Buffer) header {
	h := header{tag: tag, group: group, dtype: b.DType, ndim: len(b.Shape), nbytes: b.Len() * b.DType.Size()}
	copy(h.dims[:], b.Shape)
	return h
}

// matches reports whether a received header has the dtype and shape of b.
func (h *header) matches(b Buffer) bool {
	if h.dtype != b.DType || h.ndim != len(b.Shape) {
		return false
	}
	for i, d := range b.Shape {
		if h.dims[i] != d {
			return false
		}
	}
	return true
}
