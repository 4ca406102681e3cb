package schedules

import (
	"reflect"
	"slices"
	"testing"
)

// TestPeakBytes: with afterI equal to held (I frees nothing) the byte peak
// is Analyze's; with afterI 0 a split backward frees at I; a hand-checked
// case pins the arithmetic.
func TestPeakBytes(t *testing.T) {
	for _, name := range Names {
		s := generate(t, name, 3, 7, 0)
		tl, err := Simulate(s, unit)
		if err != nil {
			t.Fatal(err)
		}
		held := make([]int64, s.Stages())
		for i := range held {
			held[i] = int64(10 * (i + 1))
		}
		st, err := Analyze(s, tl, held)
		if err != nil {
			t.Fatal(err)
		}
		got, err := PeakBytes(s, tl, held, held)
		if err != nil || !reflect.DeepEqual(got, st.PeakBytes) {
			t.Errorf("%s: PeakBytes %v, Analyze %v (%v)", name, got, st.PeakBytes, err)
		}
		less, _ := PeakBytes(s, tl, held, make([]int64, s.Stages()))
		if slices.Max(less) > slices.Max(got) {
			t.Errorf("%s: freeing at I raised the peak: %v > %v", name, less, got)
		}
	}
	// One rank, one stage: F0 F1 I0 W0 I1 W1 with 100 held, 30 after I:
	// 100, 200, 130, 100, 30, 0.
	s, _ := Parse("0F0, 0F1, 0I0, 0W0, 0I1, 0W1")
	tl, _ := Simulate(s, unit)
	if got, _ := PeakBytes(s, tl, []int64{100}, []int64{30}); got[0] != 200 {
		t.Errorf("peak %v, want 200", got)
	}
	if _, err := PeakBytes(s, tl, []int64{1, 2}, []int64{1}); err == nil {
		t.Error("wrong number of sizes accepted")
	}
}
