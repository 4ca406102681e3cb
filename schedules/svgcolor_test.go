package schedules

import (
	"testing"
)

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
