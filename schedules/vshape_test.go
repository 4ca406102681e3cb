package schedules

import (
	"slices"
	"testing"
)

// TestVShapeClosedForms checks the V schedules against the closed forms of
// their papers with tF = tI = tW per stage: the controllable-memory paper's
// peaks of (P+2)/2 (V-Half) and (P+4)/3 (V-Min) micro-batches, reached once
// M >= P (fewer micro-batches hold less), and for DualPipeV the makespan
// 6M+P-1 of ZB-V once M >= 2P, at a peak of P + 1/2 micro-batches once
// M > P. All of them must also beat 1F1B on the same layers (one stage per
// rank at twice the cost) in makespan and in peak memory (DualPipeV trades
// half a micro-batch more memory for its shorter step).
func TestVShapeClosedForms(t *testing.T) {
	half := Costs{Default: StageCost{F: 1, B: 2, I: 1, W: 1}}
	whole := Costs{Default: StageCost{F: 2, B: 4, I: 2, W: 2}}
	for p := 1; p <= 8; p++ {
		for m := 1; m <= 32; m++ {
			ob := simulate(t, generate(t, "1f1b", p, m, 1), whole)
			for _, c := range []struct {
				name string
				peak float64
				from int // the peak is reached from this M on
			}{
				{"v-half", float64((p + 2) / 2), p},
				{"v-min", float64((p + 4) / 3), p},
				{"dualpipev", float64(2*p+1) / 2, p + 1},
			} {
				st := simulate(t, generate(t, c.name, p, m, 0), half)
				peak := slices.Max(st.PeakLive)
				if peak > c.peak || (m >= c.from && peak != c.peak) {
					t.Errorf("%s P=%d M=%d: peak %v micro-batches, want %v (at most that below M=%d)", c.name, p, m, peak, c.peak, c.from)
				}
				if st.Makespan > ob.Makespan {
					t.Errorf("%s P=%d M=%d: makespan %v above 1f1b's %v", c.name, p, m, st.Makespan, ob.Makespan)
				}
				if c.name != "dualpipev" && p >= 3 && peak >= slices.Max(ob.PeakLive) && m >= p {
					t.Errorf("%s P=%d M=%d: peak %v not below 1f1b's %v", c.name, p, m, peak, slices.Max(ob.PeakLive))
				}
			}
			if m >= 2*p {
				st := simulate(t, generate(t, "dualpipev", p, m, 0), half)
				if st.Makespan != float64(6*m+p-1) {
					t.Errorf("dualpipev P=%d M=%d: makespan %v, want 6M+P-1 = %d", p, m, st.Makespan, 6*m+p-1)
				}
			}
		}
	}
}

// TestDualPipeVPhases checks rank 0 of DualPipeV for P=2, M=4 against the
// phases written out by hand: F s0 ×2 (step 1), (F s0, F s3) (step 2), I W F
// on s3 (step 3), one round of the pairs (step 4), B s3 then the pair
// (F s3, B s0) (step 5), B s3 then I s0 (step 6: one round, and rank 0,
// even, splits from the middle round's second backward on), then the W of
// that I and I s0 (step 7) and the last W (step 8).
func TestDualPipeVPhases(t *testing.T) {
	s := generate(t, "dualpipev", 2, 4, 0)
	want := []Action{
		{F, 0, 0}, {F, 0, 1},
		{F, 0, 2}, {F, 3, 0},
		{I, 3, 0}, {W, 3, 0}, {F, 3, 1},
		{F, 0, 3}, {B, 3, 1}, {F, 3, 2}, {B, 0, 0},
		{B, 3, 2}, {F, 3, 3}, {B, 0, 1},
		{B, 3, 3}, {I, 0, 2},
		{W, 0, 2}, {I, 0, 3},
		{W, 0, 3},
	}
	var got []Action
	for _, a := range s.Ranks[0] {
		if a.Kind.IsCompute() {
			got = append(got, a)
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("rank 0 compute order\n got %v\nwant %v", got, want)
	}
}
