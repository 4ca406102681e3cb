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
	steps, err := Steps(s, measured)
	if err != nil {
		return nil, fmt.Errorf("expected timeline: %w", err)
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

// Lateness is how a measured compute action compares with the expected
// timeline: By, how long after its expected end it ended; Over, how much
// longer than expected it ran; Expected, its expected duration.
type Lateness struct{ By, Over, Expected float64 }

// lateShare and lateFloor are when Late marks an action: it ran longer than
// expected by more than lateShare of its expected time and by more than
// lateFloor of the picture's span. Ending late alone does not mark it: an
// action that only started late, behind a slow peer or a slow action before
// it on its rank, is not where the time went.
const (
	lateShare = 0.5
	lateFloor = 0.002
)

// Late is the measured compute actions, by rank and index, that ran longer
// than their expected duration by more than share of it and more than floor
// seconds; measured and expected hold the same actions in the same order
// (Expected's output for measured, whose durations are each step's means
// per rank).
func Late(measured, expected *Timeline, share, floor float64) map[[2]int]Lateness {
	out := map[[2]int]Lateness{}
	for r, spans := range measured.Ranks {
		for i, sp := range spans {
			if !sp.Action.Kind.IsCompute() || r >= len(expected.Ranks) || i >= len(expected.Ranks[r]) {
				continue
			}
			e := expected.Ranks[r][i]
			l := Lateness{By: sp.End - e.End, Expected: e.End - e.Start}
			l.Over = (sp.End - sp.Start) - l.Expected
			if l.Over > share*l.Expected && l.Over > floor {
				out[[2]int{r, i}] = l
			}
		}
	}
	return out
}
