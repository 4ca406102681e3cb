package tensor

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestPackBF16VectorMatchesScalar: the vector conversions give ToBF16's,
// RoundBF16's and FromBF16's bits on every kind of float32 (random bit patterns cover NaNs
// of both signs, infinities, subnormals, ties), at lengths that leave
// tails for the scalar loop.
func TestPackBF16VectorMatchesScalar(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 9))
	special := []uint32{0, 0x80000000, 0x7f800000, 0xff800000, 0x7fc00000, 0xffc00001, 0x7f800001, 0xff800001,
		0x00000001, 0x807fffff, 0x7f7fffff, 0xff7fffff, 0x3f808000, 0x3f818000, 0x3f80ffff, 0x7f7f8000}
	for _, n := range []int{0, 1, 7, 8, 15, 16, 17, 31, 33, 1000, 4099} {
		src := make([]float32, n)
		for i := range src {
			b := r.Uint32()
			if i < len(special) {
				b = special[i]
			}
			src[i] = math.Float32frombits(b)
		}
		dst := make([]uint16, n)
		PackBF16(dst, src)
		back := make([]float32, n)
		UnpackBF16(back, dst)
		rounded := make([]float32, n)
		RoundBF16s(rounded, src)
		for i, v := range src {
			if w := ToBF16(v); dst[i] != w {
				t.Fatalf("n=%d: PackBF16 of %#08x at %d = %#04x, ToBF16 %#04x", n, math.Float32bits(v), i, dst[i], w)
			}
			if math.Float32bits(rounded[i]) != uint32(dst[i])<<16 {
				t.Fatalf("n=%d: RoundBF16s of %#08x at %d = %#08x, want %#04x0000", n, math.Float32bits(v), i, math.Float32bits(rounded[i]), dst[i])
			}
			if math.Float32bits(back[i]) != uint32(dst[i])<<16 {
				t.Fatalf("n=%d: UnpackBF16 of %#04x at %d = %#08x", n, dst[i], i, math.Float32bits(back[i]))
			}
		}
	}
}

func BenchmarkPackBF16(b *testing.B) {
	src := make([]float32, 1<<16)
	for i := range src {
		src[i] = float32(i) * 1.37
	}
	dst := make([]uint16, len(src))
	b.SetBytes(int64(len(src) * 4))
	for b.Loop() {
		PackBF16(dst, src)
	}
}

func BenchmarkUnpackBF16(b *testing.B) {
	src := make([]uint16, 1<<16)
	dst := make([]float32, len(src))
	b.SetBytes(int64(len(src) * 4))
	for b.Loop() {
		UnpackBF16(dst, src)
	}
}
