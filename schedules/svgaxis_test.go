package schedules

import (
	"reflect"
	"testing"
)

// TestNiceTicks: round steps of 1, 2 or 5 in the unit the step reads best
// in, labels without float noise, ticks from 0 to the span.
func TestNiceTicks(t *testing.T) {
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
		tk := niceTicks(c.span, c.max)
		var got []string
		for _, v := range tk.at(c.span) {
			got = append(got, tk.label(v))
		}
		if !reflect.DeepEqual(got, c.labels) {
			t.Errorf("span %g, at most %d: %q, want %q", c.span, c.max, got, c.labels)
		}
	}
	if tk := niceTicks(0, 10); len(tk.at(0)) != 1 {
		t.Errorf("an empty span: ticks %v", tk.at(0))
	}
}

func TestFormatDuration(t *testing.T) {
	for d, want := range map[float64]string{0.0123: "12.3 ms", 2.5: "2.5 s", 0.00004: "40 µs", 0.5: "500 ms"} {
		if got := formatDuration(d); got != want {
			t.Errorf("formatDuration(%g) = %q, want %q", d, got, want)
		}
	}
}

// TestMicroInk: labels are black on light fills (forwards; a yellow input
// gradient; an olive backward) and white on dark ones (a red backward; a
// blue input gradient).
func TestMicroInk(t *testing.T) {
	for _, c := range []struct {
		a    Action
		want string
	}{
		{Action{Kind: F, Micro: 0}, "black"}, {Action{Kind: F, Micro: 5}, "black"},
		{Action{Kind: B, Micro: 0}, "white"}, // hue 0: red
		{Action{Kind: B, Micro: 3}, "black"}, // hue 53: olive
		{Action{Kind: I, Micro: 3}, "black"}, // yellow
		{Action{Kind: I, Micro: 7}, "white"}, // hue 243: blue
	} {
		if got := microInk(c.a); got != c.want {
			t.Errorf("%v (%s): %s, want %s", c.a, microColor(c.a), got, c.want)
		}
	}
}
