package schedules

import (
	"bytes"
	"encoding/xml"
	"math"
	"strings"
	"testing"
)

// twoSteps is a simulated 1F1B step on P ranks, repeated once after a gap,
// as a measured trace of two steps holds it; replicas copies it for dp.
func twoSteps(t *testing.T, s *Schedule, c Costs, replicas int) *Timeline {
	t.Helper()
	one, err := Simulate(s, c)
	if err != nil {
		t.Fatal(err)
	}
	tl := &Timeline{Ranks: make([][]Span, replicas*len(s.Ranks))}
	for d := range replicas {
		for p, spans := range one.Ranks {
			for _, off := range []float64{0, 1} {
				for _, sp := range spans {
					sp.Start, sp.End = sp.Start+off+float64(d)*0.01, sp.End+off+float64(d)*0.01
					tl.Ranks[d*len(s.Ranks)+p] = append(tl.Ranks[d*len(s.Ranks)+p], sp)
				}
			}
		}
	}
	return tl
}

// TestExpectedOfASimulation: a "measured" timeline that is itself a
// simulation (every action at its cost, no waits) is what Expected expects,
// step by step and replica by replica, and nothing is late.
func TestExpectedOfASimulation(t *testing.T) {
	s, err := Generate("1f1b", 3, 4, 0)
	if err != nil {
		t.Fatal(err)
	}
	c := Costs{Default: StageCost{F: 0.010, B: 0.020}, Stages: map[int]StageCost{1: {F: 0.012, B: 0.025}}}
	measured := twoSteps(t, s, c, 2)
	exp, err := Expected(s, measured)
	if err != nil {
		t.Fatal(err)
	}
	for r := range measured.Ranks {
		if len(exp.Ranks[r]) != len(measured.Ranks[r]) {
			t.Fatalf("rank %d: %d expected spans, %d measured", r, len(exp.Ranks[r]), len(measured.Ranks[r]))
		}
		for i, sp := range measured.Ranks[r] {
			e := exp.Ranks[r][i]
			if e.Action != sp.Action || math.Abs(e.Start-sp.Start) > 1e-9 || math.Abs(e.End-sp.End) > 1e-9 {
				t.Fatalf("rank %d span %d: expected %v %.9f..%.9f, measured %v %.9f..%.9f", r, i, e.Action, e.Start, e.End, sp.Action, sp.Start, sp.End)
			}
		}
	}
	if late := LateBy(measured, exp, 1e-9); len(late) != 0 {
		t.Fatalf("late actions in a simulation: %v", late)
	}
}

// TestLateAction: one forward that takes 50 ms longer than its peers makes it
// end late, and the actions after it on its rank late too; the picture
// outlines exactly those in red and draws every expected compute action.
func TestLateAction(t *testing.T) {
	s, err := Generate("1f1b", 2, 2, 0)
	if err != nil {
		t.Fatal(err)
	}
	measured := twoSteps(t, s, Costs{Default: StageCost{F: 0.010, B: 0.020}}, 1)
	// Rank 1's first action of the second step: its forward of micro-batch 0
	// after the receive; push it and the rest of its step 50 ms later.
	n := len(s.Ranks[1])
	first := -1
	for i := n; i < 2*n; i++ {
		sp := &measured.Ranks[1][i]
		if first < 0 && sp.Action.Kind == F {
			first = i
			sp.End += 0.050
			continue
		}
		if first >= 0 {
			sp.Start, sp.End = sp.Start+0.050, sp.End+0.050
		}
	}
	exp, err := Expected(s, measured)
	if err != nil {
		t.Fatal(err)
	}
	late := LateBy(measured, exp, 0.001)
	if _, ok := late[[2]int{1, first}]; !ok || len(late) == 0 {
		t.Fatalf("the slow forward (rank 1, span %d) is not late: %v", first, late)
	}
	for k := range late {
		if k[1] < n {
			t.Errorf("an action of the first, untouched step is late: %v", k)
		}
	}
	var b bytes.Buffer
	if err := WriteSVGCompared(&b, measured, exp, "late"); err != nil {
		t.Fatal(err)
	}
	svg := b.String()
	if err := xml.Unmarshal(b.Bytes(), new(struct{})); err != nil {
		t.Fatalf("not XML: %v", err)
	}
	compute := 0
	for _, spans := range exp.Ranks {
		for _, sp := range spans {
			if sp.Action.Kind.IsCompute() {
				compute++
			}
		}
	}
	if got := strings.Count(svg, `class="expected"`); got != compute {
		t.Errorf("%d expected boxes drawn, want %d", got, compute)
	}
	// The picture marks what is late at its scale (lateSlack of its span).
	t0, t1, _ := bounds(measured)
	if got, want := strings.Count(svg, `class="late"`), len(LateBy(measured, exp, lateSlack*(t1-t0))); got != want || got == 0 {
		t.Errorf("%d late boxes drawn, want %d (and at least one)", got, want)
	}
}

// TestExpectedRefusesAPartialStep: a trace whose last step is cut short (a
// failed run) cannot be paired with the schedule, and says so.
func TestExpectedRefusesAPartialStep(t *testing.T) {
	s, err := Generate("1f1b", 2, 2, 0)
	if err != nil {
		t.Fatal(err)
	}
	measured := twoSteps(t, s, Costs{Default: StageCost{F: 0.010, B: 0.020}}, 1)
	measured.Ranks[0] = measured.Ranks[0][:len(measured.Ranks[0])-1]
	if _, err := Expected(s, measured); err == nil || !strings.Contains(err.Error(), "rank 0 has") {
		t.Fatalf("err = %v, want one naming rank 0's spans", err)
	}
}
