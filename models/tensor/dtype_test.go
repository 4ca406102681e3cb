package tensor

import (
	"math"
	"testing"
)

func TestToBF16RoundsToNearestEven(t *testing.T) {
	cases := []struct {
		in   uint32 // float32 bits
		want uint16
	}{
		{0x3f800000, 0x3f80}, // 1
		{0x3f808000, 0x3f80}, // 1 + half an ulp: tie, to even (down)
		{0x3f818000, 0x3f82}, // tie with an odd lower neighbour: up
		{0x3f808001, 0x3f81}, // just past the tie: up
		{0x3f807fff, 0x3f80}, // just below the tie: down
		{0x7f7fffff, 0x7f80}, // largest float32 rounds past the largest bf16: +inf
		{0xff800000, 0xff80}, // -inf
		{0x00000001, 0x0000}, // smallest subnormal rounds to +0
		{0x80000000, 0x8000}, // -0
		{0x7f800001, 0x7fc0}, // signalling NaN becomes a quiet NaN, not inf
		{0xffc00000, 0xffc0}, // negative quiet NaN keeps its sign
	}
	for _, c := range cases {
		if got := ToBF16(math.Float32frombits(c.in)); got != c.want {
			t.Errorf("ToBF16(%#08x) = %#04x, want %#04x", c.in, got, c.want)
		}
	}
}

func TestBF16RoundTripIsExact(t *testing.T) {
	for h := 0; h < 1<<16; h++ {
		x := FromBF16(uint16(h))
		if x != x { // NaNs keep being NaN
			if y := FromBF16(ToBF16(x)); y == y {
				t.Fatalf("NaN %#04x came back as %v", h, y)
			}
			continue
		}
		if got := ToBF16(x); got != uint16(h) {
			t.Fatalf("bf16 %#04x → %v → %#04x", h, x, got)
		}
	}
}

func TestBF16TensorStorage(t *testing.T) {
	x := NewAs(BFloat16, 2, 3)
	if x.DType() != BFloat16 || x.Len() != 6 || x.Bytes() != 12 {
		t.Fatalf("bf16 [2 3]: dtype %v, %d elements, %d bytes", x.DType(), x.Len(), x.Bytes())
	}
	cpu, err := NewCPU("")
	if err != nil {
		t.Fatal(err)
	}
	cpu.Upload(x, []float32{1, 1.00390625, 3, -2, 0.1, 1e30})
	got := make([]float32, 6)
	cpu.Download(got, x.View(0, 6))
	want := []float32{1, 1, 3, -2, RoundBF16(0.1), RoundBF16(1e30)}
	for i := range got {
		if got[i] != want[i] {
			t.Errorf("element %d: %v, want %v", i, got[i], want[i])
		}
	}
	if v := x.View(3, 3); v.DType() != BFloat16 || v.Bytes() != 6 {
		t.Errorf("a view of a bf16 tensor is %v, %d bytes", v.DType(), v.Bytes())
	}
	f := New(6)
	cpu.Copy(f, x)
	if f.Data[4] != RoundBF16(0.1) {
		t.Errorf("copy bf16→f32 gave %v", f.Data[4])
	}
	f.Data[0] = 1.00390625 // tie between 1 and 1.0078125: to even (1)
	cpu.Copy(x, f)
	if x.Half[0] != 0x3f80 {
		t.Errorf("copy f32→bf16 gave %#04x", x.Half[0])
	}
}
