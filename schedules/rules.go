package schedules

import (
	"fmt"
	"slices"
	"strings"
)

// Names lists the schedules Generate knows, in the order plan --compare
// prints them.
var Names = []string{"gpipe", "1f1b", "interleaved", "zb-h1", "zb-v", "v-half", "v-min", "dualpipev"}

// vShaped are the schedules with two stages per rank in a V (VPlacement).
var vShaped = []string{"zb-v", "v-half", "v-min", "dualpipev"}

// Resolve checks that the named built-in schedule can be generated for p
// ranks, m micro-batches and v virtual stages per rank, and returns the v it
// runs with. v 0 asks for the schedule's own: 2 for interleaved and the V
// schedules, 1 for the others. The rules:
//
//	gpipe, 1f1b, zb-h1                 v 0 or 1 (one stage per rank)
//	interleaved                        v 0 (means 2) or 2 and more; v 1 would be 1f1b
//	zb-v, v-half, v-min, dualpipev     v 0 or 2 (a V has two stages per rank)
//	every schedule                     p ≥ 1 ranks, m ≥ 1 micro-batches
//
// Each error says what to use instead, in the terms of the --schedule and
// --virtual flags that `train` and `plan` share.
func Resolve(name string, p, m, v int) (int, error) {
	if !slices.Contains(Names, name) {
		return 0, fmt.Errorf("unknown schedule %q: use one of %s", name, strings.Join(Names, ", "))
	}
	if p < 1 {
		return 0, fmt.Errorf("schedule %s: P=%d ranks; need at least 1", name, p)
	}
	if m < 1 {
		return 0, fmt.Errorf("schedule %s: M=%d micro-batches; need at least 1", name, m)
	}
	if v < 0 {
		return 0, fmt.Errorf("schedule %s: v=%d virtual stages per rank; use 0 for the schedule's own, or a positive count", name, v)
	}
	if name == "interleaved" {
		if v == 1 {
			return 0, fmt.Errorf("schedule interleaved: v=1 virtual stage per rank would be 1f1b: use --virtual 2 or more (0 means 2), or --schedule 1f1b")
		}
		return max(v, 2), nil
	}
	if slices.Contains(vShaped, name) {
		if v != 0 && v != 2 {
			return 0, fmt.Errorf("schedule %s: v=%d; %s always has 2 stages per rank: drop --virtual, or use --schedule interleaved --virtual %d", name, v, name, v)
		}
		return 2, nil
	}
	if v > 1 {
		return 0, fmt.Errorf("schedule %s: v=%d; %s has one stage per rank: drop --virtual, or use --schedule interleaved --virtual %d", name, v, name, v)
	}
	return 1, nil
}
