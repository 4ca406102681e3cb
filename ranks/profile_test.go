package ranks

import (
	"bytes"
	"errors"
	"testing"

	"github.com/pplaunch/pplaunch/plan"
)

// TestTrainProfile: a profiled run of 4 stages on 2 ranks (interleaved)
// returns a profile with every unit timed, the bytes each unit keeps adding
// up to what each stage measured per micro-batch, one boundary per pair of
// stages with the activation's size, a peak per rank, and it reads back.
func TestTrainProfile(t *testing.T) {
	cfg := tiny(t)
	cfg.PP, cfg.Schedule, cfg.Steps, cfg.Profile = 2, "interleaved", 3, true
	res, errs := trainInProcess(t, cfg, nil)
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	p := res.Profile
	if p == nil {
		t.Fatal("no profile on rank 0")
	}
	if p.Steps != 2 || p.WarmupSteps != 1 || p.StepS <= 0 {
		t.Errorf("steps %d warm-up %d step %v s; want 2 after 1, a positive step time", p.Steps, p.WarmupSteps, p.StepS)
	}
	L := cfg.Model.Layers
	if len(p.Units) != L+2 || p.Units[0].Name != "embedding" || p.Units[L+1].Name != "head" {
		t.Fatalf("units %+v", p.Units)
	}
	for _, u := range p.Units {
		if u.F <= 0 || u.I <= 0 || u.W <= 0 || u.ActivationBytes <= 0 || u.Params != cfg.Model.UnitParams(u.Unit) {
			t.Errorf("unit %+v: want positive times and bytes and the model's parameter count", u)
		}
	}
	if len(p.Stages) != 4 {
		t.Fatalf("stages %+v", p.Stages)
	}
	unit := -1
	for _, s := range p.Stages {
		var sum int64
		for range s.Blocks {
			sum += p.Units[unit+2].ActivationBytes
			unit++
		}
		if s.Stage == 0 {
			sum += p.Units[0].ActivationBytes
		}
		if s.Stage == 3 {
			sum += p.Units[L+1].ActivationBytes
		}
		if sum != s.ActivationBytes {
			t.Errorf("stage %d: its units keep %d bytes per micro-batch, the stage measured %d", s.Stage, sum, s.ActivationBytes)
		}
	}
	want := int64(4 * cfg.MicroSize * cfg.Model.Seq * cfg.Model.Width)
	if len(p.Boundaries) != 3 {
		t.Fatalf("boundaries %+v", p.Boundaries)
	}
	for _, b := range p.Boundaries {
		if b.Bytes != want || b.Local || b.Forward < 0 || b.Backward < 0 {
			t.Errorf("boundary %+v: want %d bytes between two ranks", b, want)
		}
	}
	if len(p.Ranks) != 2 || p.Ranks[0].PeakActivationBytes <= 0 || p.Ranks[1].PeakActivationBytes <= 0 {
		t.Errorf("ranks %+v", p.Ranks)
	}
	var buf bytes.Buffer
	if err := p.Write(&buf); err != nil {
		t.Fatal(err)
	}
	back, err := plan.ReadProfile(&buf)
	if err != nil || len(back.Units) != len(p.Units) || back.Units[3] != p.Units[3] {
		t.Errorf("read back: %v", err)
	}
}
