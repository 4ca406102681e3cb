package svgdraw

import (
	"reflect"
	"testing"
)

// TestTimeTicks: round steps of 1, 2 or 5 in the unit the step reads best
// in, labels without float noise, ticks from 0 to the span.
func TestTimeTicks(t *testing.T) {
	for _, c := range []struct {
		span   float64
		max    int
		labels []string
	}{
		{0.0285, 10, []string{"0 ms", "5 ms", "10 ms", "15 ms", "20 ms", "25 ms"}},
		{0.103, 10, []string{"0 ms", "20 ms", "40 ms", "60 ms", "80 ms", "100 ms"}},
		{0.43, 8, []string{"0 ms", "100 ms", "200 ms", "300 ms", "400 ms"}},
		{2.5, 10, []string{"0.0 s", "0.5 s", "1.0 s", "1.5 s", "2.0 s", "2.5 s"}},
		{12, 5, []string{"0 s", "5 s", "10 s"}},
		{0.00042, 4, []string{"0 µs", "200 µs", "400 µs"}},
		{0.0003, 10, []string{"0 µs", "50 µs", "100 µs", "150 µs", "200 µs", "250 µs", "300 µs"}},
		{0.6, 4, []string{"0 ms", "200 ms", "400 ms", "600 ms"}},
	} {
		tk := NewTimeTicks(c.span, c.max)
		var got []string
		for _, v := range tk.At(c.span) {
			got = append(got, tk.Label(v))
		}
		if !reflect.DeepEqual(got, c.labels) {
			t.Errorf("span %g, at most %d: %q, want %q", c.span, c.max, got, c.labels)
		}
	}
	if tk := NewTimeTicks(0, 10); len(tk.At(0)) != 1 {
		t.Errorf("an empty span: ticks %v", tk.At(0))
	}
}

func TestDuration(t *testing.T) {
	for d, want := range map[float64]string{0.0123: "12.3 ms", 2.5: "2.5 s", 0.00004: "40 µs", 0.5: "500 ms"} {
		if got := Duration(d); got != want {
			t.Errorf("Duration(%g) = %q, want %q", d, got, want)
		}
	}
}
