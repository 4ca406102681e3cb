package plan

import "testing"

func TestParseBytes(t *testing.T) {
	for _, c := range []struct {
		in   string
		want int64
	}{{"12GiB", 12 << 30}, {"512MiB", 512 << 20}, {"1.5GB", 1500000000}, {"1000", 1000}, {"2 KiB", 2048}, {"0", 0}, {"-1GiB", 0}, {"lots", 0}} {
		got, err := ParseBytes(c.in)
		if got != c.want || (c.want == 0) != (err != nil) {
			t.Errorf("ParseBytes(%q) = %d, %v; want %d", c.in, got, err, c.want)
		}
	}
}
