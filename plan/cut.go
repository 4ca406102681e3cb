package plan

import (
	"fmt"
	"slices"

	"github.com/pplaunch/pplaunch/models"
	"github.com/pplaunch/pplaunch/schedules"
)

// ProfileCut is the cut of the profile's model into stages minimising the
// slowest stage's F+I+W (models.PartitionCosts).
func ProfileCut(p *Profile, stages int) ([]int, error) {
	cost := make([]float64, len(p.Units))
	for i, u := range p.Units {
		cost[i] = u.F + u.I + u.W
	}
	return models.PartitionCosts(p.Model.Layers, stages, cost)
}

// CutModel is ProfileCut for a run of model cfg, which must be the model
// the profile measured: another model's block times say nothing of its own.
func (p *Profile) CutModel(cfg models.Config, stages int) ([]int, error) {
	m := p.Model
	if m.Kind != cfg.Kind || m.Layers != cfg.Layers || m.Width != cfg.Width || m.Heads != cfg.Heads || m.Seq != cfg.Seq || m.Vocab != cfg.Vocab {
		return nil, fmt.Errorf("the profile measured a %s of %d layers, width %d, %d heads, seq %d, vocab %d; this run's model is a %s of %d layers, width %d, %d heads, seq %d, vocab %d: profile this model first (train --profile)",
			m.Kind, m.Layers, m.Width, m.Heads, m.Seq, m.Vocab, cfg.Kind, cfg.Layers, cfg.Width, cfg.Heads, cfg.Seq, cfg.Vocab)
	}
	return ProfileCut(p, stages)
}

// CutRow is one cut of a profiled layout; plan --json prints them.
type CutRow struct {
	Name          string  `json:"name"`
	Cut           []int   `json:"cut"`
	SlowestStageS float64 `json:"slowest_stage_s"`
	StepS         float64 `json:"step_s"`
	Bubble        float64 `json:"bubble"`
}

// CompareCuts predicts the profiled layout with its measured cut
// ("current") and with the profile-balanced one ("balanced"), in that order.
func CompareCuts(p *Profile) ([]CutRow, error) {
	l := p.Layout
	if !slices.Contains(schedules.Names, l.Schedule) {
		return nil, fmt.Errorf("measured with the schedule file %s; the cut comparison predicts built-in schedules only: search with --world N instead", l.Schedule)
	}
	base := Candidate{PP: l.PP, DP: l.DP, Schedule: l.Schedule, Virtual: l.Virtual, Micro: l.Microbatches, MicroSize: p.MicroBatchSize, Recompute: p.Recompute}
	var rows []CutRow
	for _, k := range []struct {
		name string
		cut  []int
	}{{"current", l.Cut}, {"balanced", nil}} {
		cand := base
		cand.Cut = k.cut
		pr, err := Predict(p, cand)
		if err != nil {
			return nil, err
		}
		rows = append(rows, CutRow{k.name, pr.Cut, pr.SlowestStageS, pr.StepS, pr.Bubble})
	}
	return rows, nil
}
