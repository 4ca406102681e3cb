package collective

import (
	"strings"
	"testing"
)

func TestHeaderRoundTrip(t *testing.T) {
	cases := []header{
		{tag: Tag{Kind: Activation, Chunk: 1, Step: 9, MicroBatch: 3}, group: 0, dtype: Float32, ndim: 2, dims: [MaxDims]int{4, 5}, nbytes: 80},
		{tag: Tag{Kind: kindCollective, Step: 1 << 31}, group: 0xdeadbeef, dtype: Float64, ndim: 1, dims: [MaxDims]int{0}, nbytes: 0},
		{tag: Tag{Kind: Control}, dtype: Uint8, ndim: 0, nbytes: 1},
		{tag: Tag{Kind: Data}, dtype: Float32, ndim: MaxDims, dims: [MaxDims]int{1, 2, 1, 2, 1, 2, 1, 3}, nbytes: 4 * 24},
	}
	for _, h := range cases {
		var b [headerMax]byte
		n := encodeHeader(b[:], &h)
		got, m, err := decodeHeader(b[:n])
		if err != nil || m != n || got != h {
			t.Errorf("round trip of %+v: got %+v (%d of %d bytes), %v", h, got, m, n, err)
		}
		if _, _, err := decodeHeader(b[:n-1]); err != errShortHeader {
			t.Errorf("truncated header: %v, want errShortHeader", err)
		}
	}
}

func TestHeaderCorrupt(t *testing.T) {
	good := header{tag: Tag{Kind: Activation}, dtype: Float32, ndim: 2, dims: [MaxDims]int{2, 3}, nbytes: 24}
	cases := []struct {
		name   string
		mutate func(b []byte)
		want   string
	}{
		{"magic", func(b []byte) { b[0] = 'X' }, "bad frame magic"},
		{"dtype", func(b []byte) { b[5] = 77 }, "unknown dtype 77"},
		{"ndim", func(b []byte) { b[6] = MaxDims + 1 }, "9 dims"},
		{"flags", func(b []byte) { b[7] = 1 }, "reserved"},
		{"length", func(b []byte) { b[24] = 25 }, "payload is 25 bytes but shape [2 3] of float32 needs 24"},
		{"huge", func(b []byte) { b[31] = 0xff }, "exceeds the limit"},
		{"dim", func(b []byte) { b[39] = 0x7f }, "too large"},
	}
	for _, tc := range cases {
		var b [headerMax]byte
		n := encodeHeader(b[:], &good)
		tc.mutate(b[:])
		_, _, err := decodeHeader(b[:n])
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
}

// FuzzDecodeHeader feeds arbitrary bytes to the frame decoder: it must never
// panic, and whatever it accepts must encode back to the same bytes.
func FuzzDecodeHeader(f *testing.F) {
	seeds := []header{
		{tag: Tag{Kind: Activation, Step: 3, MicroBatch: 2}, dtype: Float32, ndim: 2, dims: [MaxDims]int{2, 3}, nbytes: 24},
		{tag: Tag{Kind: kindBye}, dtype: Uint8, ndim: 1, nbytes: 0},
		{tag: Tag{Kind: Gradient}, dtype: Float64, ndim: 3, dims: [MaxDims]int{0, 1 << 40, 5}, nbytes: 0},
	}
	for _, h := range seeds {
		var b [headerMax]byte
		n := encodeHeader(b[:], &h)
		f.Add(b[:n])
	}
	f.Add([]byte("PPM1"))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		h, n, err := decodeHeader(b)
		if err != nil {
			return
		}
		if n > len(b) || h.nbytes < 0 || h.nbytes > MaxPayload {
			t.Fatalf("accepted header of %d bytes from %d, payload %d", n, len(b), h.nbytes)
		}
		var out [headerMax]byte
		m := encodeHeader(out[:], &h)
		if string(out[:m]) != string(b[:n]) {
			t.Fatalf("re-encoding changed the header:\n%x\n%x", b[:n], out[:m])
		}
	})
}
