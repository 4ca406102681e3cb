package svgdraw

import (
	"fmt"
	"math"
	"slices"
	"testing"
)

func TestNiceTicks(t *testing.T) {
	for _, c := range []struct {
		top  float64
		want []float64
	}{
		{0, []float64{0, 1}},
		{-3, []float64{0, 1}},
		{1, []float64{0, 0.2, 0.4, 0.6, 0.8, 1}},
		{10, []float64{0, 2, 4, 6, 8, 10}},
		{11, []float64{0, 2.5, 5, 7.5, 10, 12.5}},
		{1850, []float64{0, 500, 1000, 1500, 2000}},
		{9028, []float64{0, 2000, 4000, 6000, 8000, 10000}},
		{14800, []float64{0, 5000, 10000, 15000}},
		{1.2e6, []float64{0, 250000, 500000, 750000, 1e6, 1.25e6}},
		{0.907, []float64{0, 0.2, 0.4, 0.6, 0.8, 1}},
		{1.15, []float64{0, 0.25, 0.5, 0.75, 1, 1.25}},
	} {
		got := NiceTicks(c.top, 5)
		if !slices.EqualFunc(got, c.want, func(a, b float64) bool { return math.Abs(a-b) <= 1e-9*max(1, b) }) {
			t.Errorf("NiceTicks(%v, 5) = %v, want %v", c.top, got, c.want)
		}
	}
}

func TestCompactNum(t *testing.T) {
	for _, c := range []struct {
		v    float64
		want string
	}{
		{0, "0"}, {0.25, "0.25"}, {0.6000000000000001, "0.6"}, {7.5, "7.5"}, {10, "10"}, {950, "950"},
		{999.9, "1k"}, {1000, "1k"}, {1234, "1.23k"}, {1250, "1.25k"}, {35000, "35k"}, {250000, "250k"},
		{1.1e6, "1.1M"}, {1.25e6, "1.25M"}, {2.5e9, "2.5G"}, {-1500, "-1.5k"},
	} {
		if got := CompactNum(c.v); got != c.want {
			t.Errorf("CompactNum(%v) = %q, want %q", c.v, got, c.want)
		}
	}
}

func TestLog2Pos(t *testing.T) {
	for _, c := range []struct {
		world, lo, hi int
		want          float64
	}{
		{1, 1, 8, 100}, {8, 1, 8, 400}, {2, 1, 8, 200}, {4, 1, 8, 300},
		{64, 1, 4096, 250}, {4096, 1, 4096, 400}, {4, 2, 8, 250}, {6, 6, 6, 250},
	} {
		if got := Log2Pos(c.world, c.lo, c.hi, 100, 400); math.Abs(got-c.want) > 1e-9 {
			t.Errorf("Log2Pos(%d, %d, %d) = %v, want %v", c.world, c.lo, c.hi, got, c.want)
		}
	}
}

func TestThinLabels(t *testing.T) {
	for _, c := range []struct {
		xs   []float64
		want []bool
	}{
		{[]float64{50}, []bool{true}},
		{[]float64{0, 40, 80}, []bool{true, true, true}},
		{[]float64{0, 10, 20, 30, 40}, []bool{true, false, false, false, true}},
		{[]float64{0, 10, 20, 30, 40, 45}, []bool{true, false, false, false, false, true}},
	} {
		if got := ThinLabels(c.xs, 30); !slices.Equal(got, c.want) {
			t.Errorf("ThinLabels(%v, 30) = %v, want %v", c.xs, got, c.want)
		}
	}
}

// TestLogTicks: round values on a log axis enclosing the range,
// with every digit where 1, 2 and 5 would give fewer than three.
func TestLogTicks(t *testing.T) {
	for _, c := range []struct {
		lo, hi float64
		want   []float64
	}{
		{1900, 9300, []float64{1000, 2000, 5000, 10000}},
		{120, 45000, []float64{100, 200, 500, 1000, 2000, 5000, 10000, 20000, 50000}},
		{2100, 4000, []float64{2000, 3000, 4000}},
		{1000, 1000, []float64{1000, 2000}},
	} {
		if got := LogTicks(c.lo, c.hi); fmt.Sprint(got) != fmt.Sprint(c.want) {
			t.Errorf("LogTicks(%g, %g) = %v, want %v", c.lo, c.hi, got, c.want)
		}
	}
	y := LogScale(1000, 8000, 300, 0)
	if math.Abs(y(2000)-200) > 1e-9 || math.Abs(y(4000)-100) > 1e-9 {
		t.Errorf("log scale: 2000 at %g, 4000 at %g; want 200 and 100", y(2000), y(4000))
	}
}
