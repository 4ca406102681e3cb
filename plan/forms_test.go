package plan

import (
	"math"
	"slices"
	"testing"

	"github.com/pplaunch/pplaunch/schedules"
)

// TestClosedForms: where a closed form is given, the simulator reaches it:
// the bubble with equal stages and free transfers, the peak for any costs;
// a transfer time, or unequal F, I and W for the zero-bubble schedules,
// gives no bubble form.
func TestClosedForms(t *testing.T) {
	even := RankCosts{F: 1, B: 2, W: 1}
	for _, pm := range [][2]int{{4, 8}, {8, 16}, {3, 7}, {2, 4}} {
		all, err := Compare(pm[0], pm[1], 0, even, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range all {
			if r.BubbleFormula != nil && math.Abs(*r.BubbleFormula-r.Bubble) > 1e-9 {
				t.Errorf("P=%d M=%d %s: simulated bubble %v, %s = %v", pm[0], pm[1], r.Schedule, r.Bubble, r.Formula, *r.BubbleFormula)
			}
			if r.PeakFormulaVal != nil && slices.Max(r.PeakActivations) != *r.PeakFormulaVal {
				t.Errorf("P=%d M=%d %s: simulated peak %v, %s = %v", pm[0], pm[1], r.Schedule, slices.Max(r.PeakActivations), r.PeakFormula, *r.PeakFormulaVal)
			}
		}
	}
	for _, c := range []struct {
		name  string
		p, m  int
		costs RankCosts
		want  string
	}{
		{"1f1b", 4, 8, even, "(P-1)/(M+P-1)"},
		{"interleaved", 4, 8, even, "(P-1)/(v·M+P-1)"},
		{"interleaved", 4, 6, even, ""}, // M not a multiple of P
		{"zb-h1", 4, 8, even, "(P-1)/(3M+P-1)"},
		{"zb-h1", 4, 8, RankCosts{F: 1, B: 3, W: 1}, ""}, // I ≠ W
		{"zb-v", 4, 8, even, "(P-1)/(6M+P-1)"},
		{"1f1b", 4, 8, RankCosts{F: 1, B: 2, W: 1, Comm: 0.1}, ""},
		{"dualpipev", 4, 8, even, ""},
	} {
		if got, _ := BubbleForm(c.name, c.p, c.m, 2, c.costs); got != c.want {
			t.Errorf("BubbleForm(%s, P=%d, M=%d, %+v) = %q, want %q", c.name, c.p, c.m, c.costs, got, c.want)
		}
	}
}

// TestCompareVirtual: only interleaved takes the v asked for.
func TestCompareVirtual(t *testing.T) {
	all, err := Compare(2, 4, 4, RankCosts{F: 1, B: 2, W: 1}, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range all {
		want, err := schedules.Resolve(r.Schedule, 2, 4, 0)
		if r.Schedule == "interleaved" {
			want = 4
		}
		if err != nil || r.V != want {
			t.Errorf("%s: v %d, want %d (%v)", r.Schedule, r.V, want, err)
		}
	}
}
