package schedules

import (
	"fmt"
	"math"
)

// Steps is how many whole steps of s a measured timeline holds (each rank's
// spans, one per action of its list, step after step, as Expected reads
// them), or an error where the ranks do not hold the same whole number.
func Steps(s *Schedule, tl *Timeline) (int, error) {
	P := len(s.Ranks)
	if P == 0 || len(tl.Ranks) == 0 || len(tl.Ranks)%P != 0 {
		return 0, fmt.Errorf("%d ranks measured, not a multiple of the schedule's %d", len(tl.Ranks), P)
	}
	steps := -1
	for w, spans := range tl.Ranks {
		n := len(s.Ranks[w%P])
		if n == 0 || len(spans)%n != 0 || (steps >= 0 && len(spans)/n != steps) {
			return 0, fmt.Errorf("rank %d has %d spans, not the same whole number of steps of %d actions as the others", w, len(spans), n)
		}
		steps = len(spans) / n
	}
	return steps, nil
}

// Window is steps from..to-1 (from 0) of a measured timeline of s, and the
// time each of them begins (its earliest span on any rank).
func Window(s *Schedule, tl *Timeline, from, to int) (*Timeline, []float64, error) {
	steps, err := Steps(s, tl)
	if err != nil {
		return nil, nil, err
	}
	if from < 0 || to > steps || from >= to {
		return nil, nil, fmt.Errorf("steps %d..%d of a timeline of %d", from, to-1, steps)
	}
	P := len(s.Ranks)
	out := &Timeline{Ranks: make([][]Span, len(tl.Ranks))}
	starts := make([]float64, to-from)
	for k := range starts {
		starts[k] = math.Inf(1)
	}
	for w, spans := range tl.Ranks {
		n := len(s.Ranks[w%P])
		out.Ranks[w] = append([]Span(nil), spans[from*n:to*n]...)
		for i, sp := range out.Ranks[w] {
			starts[i/n] = math.Min(starts[i/n], sp.Start)
		}
	}
	return out, starts, nil
}
