package ranks

import "testing"

// TestShapesDue: when the ranks compare their transfer shapes.
func TestShapesDue(t *testing.T) {
	for _, tc := range []struct {
		every, device bool
		step, first   int
		want          bool
	}{
		{false, false, 0, 0, false}, // TCP: its frames carry shapes
		{false, false, 3, 0, false},
		{true, false, 3, 0, true}, // --check-transfers: every step
		{false, true, 0, 0, true}, // NCCL: the run's first step
		{false, true, 5, 5, true}, // ... also after a resume
		{false, true, 6, 5, false},
		{true, true, 6, 5, true},
	} {
		if got := shapesDue(tc.every, tc.device, tc.step, tc.first); got != tc.want {
			t.Errorf("shapesDue(every %v, device %v, step %d, first %d) = %v, want %v", tc.every, tc.device, tc.step, tc.first, got, tc.want)
		}
	}
}
