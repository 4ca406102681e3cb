package ranks

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/pplaunch/pplaunch/plan"
)

// TestPredictedPeakIsMeasured trains each layout with --profile and checks
// that the peak activation bytes the executor measured on every pipeline
// rank equal the ones plan.Predict gives from the profile's per-unit bytes and
// the simulated schedule.
func TestPredictedPeakIsMeasured(t *testing.T) {
	for _, c := range []struct {
		sched  string
		pp, dp int
	}{
		{"1f1b", 2, 1}, {"gpipe", 2, 1}, {"zb-h1", 2, 1}, {"interleaved", 2, 1}, {"zb-v", 2, 1},
		{"v-half", 2, 1}, {"v-min", 2, 1}, {"dualpipev", 2, 1}, {"1f1b", 4, 1}, {"zb-h1", 1, 2},
	} {
		t.Run(fmt.Sprintf("%s/pp%d/dp%d", c.sched, c.pp, c.dp), func(t *testing.T) {
			cfg := tiny(t)
			cfg.Schedule, cfg.PP, cfg.DP, cfg.Steps, cfg.Profile = c.sched, c.pp, c.dp, 2, true
			res, errs := trainInProcess(t, cfg, nil)
			if err := errors.Join(errs...); err != nil {
				t.Fatal(err)
			}
			p := res.Profile
			pred, err := plan.Predict(p, plan.Candidate{PP: c.pp, DP: c.dp, Schedule: c.sched, Micro: cfg.Micro, MicroSize: cfg.MicroSize, Cut: p.Layout.Cut})
			if err != nil {
				t.Fatal(err)
			}
			var measured []int64
			for _, r := range p.Ranks {
				measured = append(measured, r.PeakActivationBytes)
			}
			if !slices.Equal(measured, pred.Activations) {
				t.Errorf("peak activation bytes per rank: measured %v, predicted %v", measured, pred.Activations)
			}
		})
	}
}
