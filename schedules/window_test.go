package schedules

import (
	"reflect"
	"strings"
	"testing"
)

// TestWindow: a window of a three-step timeline holds those steps' spans
// of every rank, in order, and each step's earliest start; a timeline that
// is not whole steps, or a window outside it, is refused.
func TestWindow(t *testing.T) {
	s, err := Generate("1f1b", 2, 2, 0)
	if err != nil {
		t.Fatal(err)
	}
	tl := twoSteps(t, s, Costs{Default: StageCost{F: 0.010, B: 0.020}}, 1)
	if n, err := Steps(s, tl); err != nil || n != 2 {
		t.Fatalf("Steps: %d, %v; want 2", n, err)
	}
	win, starts, err := Window(s, tl, 1, 2)
	if err != nil {
		t.Fatal(err)
	}
	for r := range tl.Ranks {
		n := len(s.Ranks[r])
		if !reflect.DeepEqual(win.Ranks[r], tl.Ranks[r][n:]) {
			t.Errorf("rank %d: window %v, want the second step's spans", r, win.Ranks[r])
		}
	}
	first := min(tl.Ranks[0][len(s.Ranks[0])].Start, tl.Ranks[1][len(s.Ranks[1])].Start)
	if len(starts) != 1 || starts[0] != first {
		t.Errorf("starts %v, want [%g]", starts, first)
	}
	if _, _, err := Window(s, tl, 1, 3); err == nil || !strings.Contains(err.Error(), "steps 1..2 of a timeline of 2") {
		t.Errorf("a window past the end: %v", err)
	}
	tl.Ranks[1] = tl.Ranks[1][1:]
	if _, err := Steps(s, tl); err == nil || !strings.Contains(err.Error(), "rank 1 has") {
		t.Errorf("a partial step: %v", err)
	}
}
