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
	if late := Late(measured, exp, 0, 1e-9); len(late) != 0 {
		t.Fatalf("late actions in a simulation: %v", late)
	}
}

// TestLateAction: one forward that takes 50 ms longer than its peers is
// late; the actions after it, on its rank and its peer's, end late too but
// only because they began late, and are not marked. The picture outlines
// exactly the late one in red, draws every expected compute action, and
// says in a legend what the strips and the red mean.
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
	late := Late(measured, exp, lateShare, 0.001)
	// Expected takes the step's mean forward of the stage, (60+10)/2 ms.
	if l, ok := late[[2]int{1, first}]; !ok || len(late) != 1 || math.Abs(l.Over-0.025) > 1e-9 || math.Abs(l.Expected-0.035) > 1e-9 {
		t.Fatalf("want only the slow forward (rank 1, span %d), 25 ms over its expected 35 ms: %v", first, late)
	}
	endsLate := 0
	for i := first + 1; i < 2*n; i++ {
		if measured.Ranks[1][i].Action.Kind.IsCompute() && measured.Ranks[1][i].End-exp.Ranks[1][i].End > 0.010 {
			endsLate++
		}
	}
	if endsLate == 0 {
		t.Fatalf("the test's premise: the actions after the slow one end late too")
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
	if got := strings.Count(svg, `class="late"`); got != 1 {
		t.Errorf("%d late boxes drawn, want 1", got)
	}
	for _, want := range []string{"expected: the step simulated from its mean action times", "late: ran over 50% longer than expected", "ran 25 ms longer than expected (35 ms)"} {
		if !strings.Contains(svg, want) {
			t.Errorf("the picture does not say %q", want)
		}
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
