package ranks

import (
	"testing"

	"github.com/pplaunch/pplaunch/schedules"
)

// TestSummaryRunningTotals: the running totals give what the whole list of
// records gave (first and last loss, latest validation loss, means of the
// steps after the first, or of the only one), and keep no record's
// timeline: what the summary holds is the same after 3 steps as after 300.
func TestSummaryRunningTotals(t *testing.T) {
	for _, steps := range []int{0, 1, 3, 300} {
		var s Summary
		var recs []StepRecord
		for i := range steps {
			r := StepRecord{Step: i, Loss: 5 - float64(i)/100, TokensPerS: 1000 + float64(i%7), StepS: 0.1 * float64(1+i%3),
				BubbleMeasured: 0.01 * float64(i%5), BubblePredicted: 0.02 * float64(i%4), PeakActivation: []int64{int64(i)},
				Timeline: &schedules.Timeline{Ranks: make([][]schedules.Span, 4)}}
			if i%2 == 1 {
				v := float64(i)
				r.ValLoss = &v
			}
			recs = append(recs, r)
			s.Add(r)
		}
		if s.Steps != steps || s.Last.Timeline != nil {
			t.Fatalf("%d steps: summary of %d, last timeline kept %v", steps, s.Steps, s.Last.Timeline != nil)
		}
		tps, st, bm, bp := s.Steady()
		if steps == 0 {
			if tps != 0 || st != 0 || s.ValLoss != nil {
				t.Errorf("no steps: %v %v %v", tps, st, s.ValLoss)
			}
			continue
		}
		steady := recs
		if len(steady) > 1 {
			steady = steady[1:]
		}
		var wt, ws, wm, wp float64
		for _, r := range steady {
			wt += r.TokensPerS
			ws += r.StepS
			wm += r.BubbleMeasured
			wp += r.BubblePredicted
		}
		n := float64(len(steady))
		if tps != wt/n || st != ws/n || bm != wm/n || bp != wp/n {
			t.Errorf("%d steps: means %v %v %v %v, want %v %v %v %v", steps, tps, st, bm, bp, wt/n, ws/n, wm/n, wp/n)
		}
		if s.FirstLoss != recs[0].Loss || s.Last.Loss != recs[steps-1].Loss || s.Last.PeakActivation[0] != int64(steps-1) {
			t.Errorf("%d steps: first loss %v last %v", steps, s.FirstLoss, s.Last.Loss)
		}
		var wantVal *float64
		for _, r := range recs {
			if r.ValLoss != nil {
				wantVal = r.ValLoss
			}
		}
		if (wantVal == nil) != (s.ValLoss == nil) || (wantVal != nil && *wantVal != *s.ValLoss) {
			t.Errorf("%d steps: validation loss %v, want %v", steps, s.ValLoss, wantVal)
		}
	}
}
