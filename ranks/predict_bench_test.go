package ranks

import (
	"errors"
	"fmt"
	"os"
	"testing"
	"text/tabwriter"

	"github.com/pplaunch/pplaunch/models"
	"github.com/pplaunch/pplaunch/plan"
	"github.com/pplaunch/pplaunch/schedules"
)

// BenchmarkPredictedStep shows how far a profile's predictions can be
// trusted: it profiles one run (1F1B on 2 ranks), predicts the pipeline
// time of other 2-rank layouts from that profile alone, then trains each
// layout in alternating rounds (A B C ... A B C ...) and prints the
// predicted time beside the measured one (the median pipeline makespan of
// the steps after the first, over all rounds). It asserts nothing about
// time. Run: go test ./ranks -run '^$' -bench PredictedStep -benchtime 1x
func BenchmarkPredictedStep(b *testing.B) {
	base := tiny(&testing.T{})
	base.Model = models.Config{Kind: "gpt", Vocab: 256, Layers: 8, Width: 64, Heads: 4, Seq: 32}
	base.Micro, base.MicroSize, base.Steps, base.EvalBatches = 8, 2, 4, 0
	layouts := []struct {
		sched  string
		pp, dp int
	}{{"1f1b", 2, 1}, {"gpipe", 2, 1}, {"zb-h1", 2, 1}, {"interleaved", 2, 1}, {"zb-v", 2, 1}, {"v-half", 2, 1}, {"dualpipev", 2, 1}}
	const rounds = 3
	for b.Loop() {
		prof := base
		prof.PP, prof.Profile = 2, true
		res, errs := trainInProcess(&testing.T{}, prof, nil)
		if err := errors.Join(errs...); err != nil || res == nil || res.Profile == nil {
			b.Fatalf("profiling run: %v", err)
		}
		measured := make([][]float64, len(layouts))
		for range rounds {
			for i, l := range layouts {
				cfg := base
				cfg.Schedule, cfg.PP, cfg.DP = l.sched, l.pp, l.dp
				recs, errs := trainRecorded(&testing.T{}, cfg)
				if err := errors.Join(errs...); err != nil {
					b.Fatalf("%s: %v", l.sched, err)
				}
				lay, err := cfg.Plan(l.pp * l.dp)
				if err != nil {
					b.Fatal(err)
				}
				for _, rec := range recs[1:] {
					pipe := &schedules.Timeline{Ranks: rec.Timeline.Ranks[:l.pp]}
					st, err := schedules.Analyze(lay.Sched, pipe, nil)
					if err != nil {
						b.Fatal(err)
					}
					measured[i] = append(measured[i], st.Makespan)
				}
			}
		}
		tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
		fmt.Fprintf(tw, "layout\tpredicted ms\tmeasured ms (median of %d)\tpredicted/measured\n", len(measured[0]))
		for i, l := range layouts {
			cfg := base
			cfg.Schedule, cfg.PP, cfg.DP = l.sched, l.pp, l.dp
			lay, err := cfg.Plan(l.pp * l.dp)
			if err != nil {
				b.Fatal(err)
			}
			pr, err := plan.Predict(res.Profile, plan.Candidate{PP: l.pp, DP: l.dp, Schedule: l.sched, Micro: cfg.Micro, MicroSize: cfg.MicroSize, Cut: lay.Cut})
			if err != nil {
				b.Fatal(err)
			}
			m := median(measured[i])
			fmt.Fprintf(tw, "%s pp%d×dp%d\t%.1f\t%.1f\t%.2f\n", l.sched, l.pp, l.dp, 1e3*pr.PipelineS, 1e3*m, pr.PipelineS/m)
		}
		tw.Flush()
	}
}
