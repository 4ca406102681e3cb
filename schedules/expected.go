package schedules

import (
	"fmt"
	"math"
)

// Expected is what a measured run of s would have looked like had every
// action taken its step's mean time and no transfer waited: for each step of
// measured (each rank's spans, one per action of its list, step after step)
// and each data-parallel replica (world ranks d·P .. d·P+P-1), s simulated
// with that step's mean action times (Predict, no transfer time), placed at
// the step's first start. Laid beside measured (WriteSVGCompared), it shows
// the actions that ran late.
func Expected(s *Schedule, measured *Timeline) (*Timeline, error) {
	P := len(s.Ranks)
	if P == 0 || len(measured.Ranks)%P != 0 {
		return nil, fmt.Errorf("expected timeline: %d ranks measured, not a multiple of the schedule's %d", len(measured.Ranks), P)
	}
	steps := -1
	for w, spans := range measured.Ranks {
		n := len(s.Ranks[w%P])
		if n == 0 || len(spans)%n != 0 || (steps >= 0 && len(spans)/n != steps) {
			return nil, fmt.Errorf("expected timeline: rank %d has %d spans, not the same whole number of steps of %d actions as the others", w, len(spans), n)
		}
		steps = len(spans) / n
	}
	out := &Timeline{Ranks: make([][]Span, len(measured.Ranks))}
	for d := range len(measured.Ranks) / P {
		for k := range steps {
			if err := expectStep(s, measured, d*P, k, out); err != nil {
				return nil, fmt.Errorf("expected timeline: step %d of replica %d: %w", k, d, err)
			}
		}
	}
	return out, nil
}

// expectStep appends step k of the replica whose first world rank is base.
func expectStep(s *Schedule, measured *Timeline, base, k int, out *Timeline) error {
	P := len(s.Ranks)
	pipe := &Timeline{Ranks: make([][]Span, P)}
	t0 := math.Inf(1)
	for p := range P {
		n := len(s.Ranks[p])
		pipe.Ranks[p] = measured.Ranks[base+p][k*n : (k+1)*n]
		for _, sp := range pipe.Ranks[p] {
			t0 = min(t0, sp.Start)
		}
	}
	sim, err := Predict(s, pipe, 0)
	if err != nil {
		return err
	}
	for p, spans := range sim.Ranks {
		for _, sp := range spans {
			sp.Start, sp.End = sp.Start+t0, sp.End+t0
			out.Ranks[base+p] = append(out.Ranks[base+p], sp)
		}
	}
	return nil
}

// LateBy is how much later than expected each measured compute action
// ended, by rank and index, for the actions that ended more than slack
// seconds late; measured and expected hold the same actions in the same
// order (Expected's output for measured).
func LateBy(measured, expected *Timeline, slack float64) map[[2]int]float64 {
	late := map[[2]int]float64{}
	for r, spans := range measured.Ranks {
		for i, sp := range spans {
			if !sp.Action.Kind.IsCompute() || r >= len(expected.Ranks) || i >= len(expected.Ranks[r]) {
				continue
			}
			if d := sp.End - expected.Ranks[r][i].End; d > slack {
				late[[2]int{r, i}] = d
			}
		}
	}
	return late
}
