package plan

import (
	"fmt"

	"github.com/pplaunch/pplaunch/models"
)

// profilePrecision is the precision p was measured in (fp32 for a profile
// that does not say).
func (p *Profile) profilePrecision() (models.Precision, error) {
	q, err := models.ParsePrecision(p.Precision)
	if err != nil {
		return "", fmt.Errorf("profile: precision: %w", err)
	}
	return q, nil
}

// actBytes is the bytes of one activation element in p's precision.
func (p *Profile) actBytes() int {
	q, err := p.profilePrecision()
	if err != nil {
		return 4
	}
	return q.ActivationBytes()
}

// AtPrecision is p as a run in precision q would have measured it, for
// the planner's memory model (plan --precision): the activation bytes
// kept and sent scale with the bytes of one element (2 in bf16, 4
// otherwise), and so do the transfer times (a transfer's time in
// proportion to its bytes). Compute times stay the profile's: a profile
// measured in the precision of the run predicts its times best. The
// statistics and token ids inside the kept bytes do not shrink in bf16,
// so a bf16 prediction from an fp32 profile is low by about 1%.
func (p *Profile) AtPrecision(q models.Precision) (*Profile, error) {
	from, err := p.profilePrecision()
	if err != nil {
		return nil, err
	}
	out := *p
	out.Precision = q.String()
	num, den := int64(q.ActivationBytes()), int64(from.ActivationBytes())
	if num == den {
		return &out, nil
	}
	scale := func(b int64) int64 { return b * num / den }
	out.Units = append([]UnitProfile(nil), p.Units...)
	for i := range out.Units {
		out.Units[i].ActivationBytes = scale(out.Units[i].ActivationBytes)
		out.Units[i].AfterInputBytes = scale(out.Units[i].AfterInputBytes)
	}
	out.Boundaries = append([]BoundaryCost(nil), p.Boundaries...)
	for i := range out.Boundaries {
		b := &out.Boundaries[i]
		b.Bytes = scale(b.Bytes)
		b.Forward *= float64(num) / float64(den)
		b.Backward *= float64(num) / float64(den)
	}
	out.Stages = append([]StageProfile(nil), p.Stages...)
	for i := range out.Stages {
		out.Stages[i].ActivationBytes = scale(out.Stages[i].ActivationBytes)
	}
	out.Ranks = append([]RankProfile(nil), p.Ranks...)
	for i := range out.Ranks {
		out.Ranks[i].PeakActivationBytes = scale(out.Ranks[i].PeakActivationBytes)
	}
	return &out, nil
}
