package schedules

import (
	"fmt"
	"slices"
	"strings"
)

// checkMicroRange catches a file whose stages all run the same number n of
// forwards while some stage's micro-batch numbers are not 0..n-1: the file
// then means n micro-batches, and that stage's row is off (torch 2.15's
// Schedule1F1B writes its last rank as 3F1,3B0,...,3F4 for 4 micro-batches).
// Without it the reader would take M = 5 and report the first missing
// forward on another rank, which points away from the fault.
func checkMicroRange(s *Schedule) error {
	fwd := make([][]int, len(s.Placement))
	for _, l := range s.Ranks {
		for _, a := range l {
			if a.Kind == F && a.Stage < len(fwd) {
				fwd[a.Stage] = append(fwd[a.Stage], a.Micro)
			}
		}
	}
	n := len(fwd[0])
	for _, f := range fwd {
		if len(f) != n {
			return nil // a different fault, for Validate to name
		}
	}
	if n == 0 || n >= s.M {
		return nil
	}
	var bad []string
	for st, f := range fwd {
		if msg := microOff(f, n); msg != "" {
			bad = append(bad, fmt.Sprintf("stage %d (rank %d) %s", st, s.Placement[st], msg))
		}
	}
	if len(bad) == 0 {
		return nil
	}
	return fmt.Errorf("every stage runs %d forwards, so the file has %d micro-batches (0..%d), but %s; "+
		"torch 2.15's Schedule1F1B writes its last rank's row this way: fix that row, or use the built-in schedule (--schedule 1f1b)",
		n, n, n-1, strings.Join(bad, "; "))
}

// microOff says which of 0..n-1 the forwards f miss and which lie outside,
// or "" when f is exactly 0..n-1.
func microOff(f []int, n int) string {
	var missing, out []string
	for m := range n {
		if !slices.Contains(f, m) {
			missing = append(missing, fmt.Sprint(m))
		}
	}
	for _, m := range f {
		if m >= n {
			out = append(out, fmt.Sprint(m))
		}
	}
	var parts []string
	if len(missing) > 0 {
		parts = append(parts, "has no forward of micro-batch "+strings.Join(missing, ", "))
	}
	if len(out) > 0 {
		parts = append(parts, "runs micro-batch "+strings.Join(out, ", ")+", out of range")
	}
	return strings.Join(parts, " and ")
}
