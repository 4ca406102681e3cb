package tensor

import (
	"fmt"
	"math"
)

// DType is how a tensor stores its values. Arithmetic is always float32 (or
// wider): a bfloat16 tensor is read as float32 and written rounded to nearest
// even, so the two dtypes differ only in what is kept between operations.
type DType uint8

const (
	// Float32 is IEEE binary32, the default for every tensor.
	Float32 DType = iota
	// BFloat16 is the top half of a float32 (8 exponent bits, 7 mantissa
	// bits): the storage of activations and their gradients in bf16 training.
	BFloat16
)

// Size is the bytes one element takes.
func (d DType) Size() int {
	if d == BFloat16 {
		return 2
	}
	return 4
}

func (d DType) String() string {
	switch d {
	case Float32:
		return "float32"
	case BFloat16:
		return "bfloat16"
	}
	return fmt.Sprintf("dtype(%d)", uint8(d))
}

// ToBF16 rounds x to the nearest bfloat16, ties to even, as PyTorch's and
// CUDA's float→bf16 conversions do. NaN stays NaN (made quiet, sign kept);
// infinities stay infinite; a finite value past the largest bfloat16 rounds
// to infinity.
func ToBF16(x float32) uint16 {
	b := math.Float32bits(x)
	if b&0x7fffffff > 0x7f800000 { // NaN: keep the sign and the top payload, force quiet
		return uint16(b>>16) | 0x0040
	}
	b += 0x7fff + (b>>16)&1
	return uint16(b >> 16)
}

// FromBF16 is the float32 of a bfloat16 (exact).
func FromBF16(h uint16) float32 { return math.Float32frombits(uint32(h) << 16) }

// RoundBF16 is x rounded to the nearest bfloat16, as a float32.
func RoundBF16(x float32) float32 { return FromBF16(ToBF16(x)) }

// RoundBF16s sets dst[i] = RoundBF16(src[i]) (the same length).
func RoundBF16s(dst, src []float32) {
	if len(dst) != len(src) {
		panic(fmt.Sprintf("bf16: round %d values into %d", len(src), len(dst)))
	}
	for i := roundVector(dst, src); i < len(src); i++ {
		dst[i] = RoundBF16(src[i])
	}
}

// PackBF16 rounds src into dst (the same length).
func PackBF16(dst []uint16, src []float32) {
	if len(dst) != len(src) {
		panic(fmt.Sprintf("bf16: pack %d values into %d", len(src), len(dst)))
	}
	for i := packVector(dst, src); i < len(src); i++ {
		dst[i] = ToBF16(src[i])
	}
}

// UnpackBF16 widens src into dst (the same length).
func UnpackBF16(dst []float32, src []uint16) {
	if len(dst) != len(src) {
		panic(fmt.Sprintf("bf16: unpack %d values into %d", len(src), len(dst)))
	}
	for i := unpackVector(dst, src); i < len(src); i++ {
		dst[i] = FromBF16(src[i])
	}
}

// anyBF16 reports whether any of ts (nil ones skipped) is bfloat16: a
// product with one bfloat16 tensor reads every operand rounded to bfloat16.
func anyBF16(ts ...*Tensor) bool {
	for _, t := range ts {
		if t != nil && t.dtype == BFloat16 {
			return true
		}
	}
	return false
}
