package schedules

import (
	"fmt"
	"sort"
)

// PeakBytes returns, per rank, the most activation bytes the rank holds
// after any of its compute actions, in start order: an F of stage s adds
// held[s] for its micro-batch, an I leaves afterI[s] of it (what the weight
// pass needs), a B or W releases what is left. This is how the executor
// measures a rank's peak, so with the bytes a profile measured per stage
// the two agree exactly.
func PeakBytes(s *Schedule, tl *Timeline, held, afterI []int64) ([]int64, error) {
	if len(tl.Ranks) != s.P {
		return nil, fmt.Errorf("peak bytes: timeline has %d ranks, schedule has %d", len(tl.Ranks), s.P)
	}
	if len(held) != s.Stages() || len(afterI) != s.Stages() {
		return nil, fmt.Errorf("peak bytes: %d and %d sizes for %d stages", len(held), len(afterI), s.Stages())
	}
	peaks := make([]int64, s.P)
	for r, spans := range tl.Ranks {
		var comp []Span
		for _, sp := range spans {
			if sp.Action.Kind.IsCompute() {
				if sp.Action.Stage < 0 || sp.Action.Stage >= s.Stages() {
					return nil, fmt.Errorf("peak bytes: rank %d has %v, outside the schedule's %d stages", r, sp.Action, s.Stages())
				}
				comp = append(comp, sp)
			}
		}
		sort.SliceStable(comp, func(i, j int) bool { return comp[i].Start < comp[j].Start })
		live := map[[2]int]int64{}
		var cur int64
		for _, sp := range comp {
			a := sp.Action
			k := [2]int{a.Stage, a.Micro}
			next := int64(0)
			switch a.Kind {
			case F:
				next = held[a.Stage]
			case I:
				next = afterI[a.Stage]
			}
			cur += next - live[k]
			live[k] = next
			peaks[r] = max(peaks[r], cur)
		}
	}
	return peaks, nil
}
