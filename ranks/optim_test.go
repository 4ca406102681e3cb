package ranks

import (
	"math"
	"strings"
	"testing"

	"github.com/pplaunch/pplaunch/models"
)

func TestLRAt(t *testing.T) {
	base := TrainConfig{LR: 1e-3, MinLR: 1e-4, Warmup: 10, Steps: 110}
	for _, tc := range []struct {
		name string
		set  func(c *TrainConfig)
		step int
		want float64
	}{
		{"cosine warmup", nil, 4, 5e-4},
		{"cosine middle", nil, 60, 5.5e-4},
		{"cosine end", nil, 110, 1e-4},
		{"cosine shorter decay", func(c *TrainConfig) { c.LRDecaySteps = 60 }, 35, 5.5e-4},
		{"cosine after shorter decay", func(c *TrainConfig) { c.LRDecaySteps = 60 }, 80, 1e-4},
		{"warmup from a start", func(c *TrainConfig) { c.WarmupStart = 5e-4 }, 4, 7.5e-4},
		{"constant warmup", func(c *TrainConfig) { c.LRSchedule = LRConstant }, 4, 5e-4},
		{"constant after", func(c *TrainConfig) { c.LRSchedule = LRConstant }, 100, 1e-3},
		{"linear middle", func(c *TrainConfig) { c.LRSchedule = LRLinear }, 60, 5.5e-4},
		{"linear end", func(c *TrainConfig) { c.LRSchedule = LRLinear }, 200, 1e-4},
	} {
		c := base
		if tc.set != nil {
			tc.set(&c)
		}
		// float64 arithmetic on values near 1e-3: rounding is below 1e-18.
		if got := c.LRAt(tc.step); math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("%s: LRAt(%d) = %g, want %g", tc.name, tc.step, got, tc.want)
		}
	}
	// The default shape is models.LRSchedule to the bit.
	s := models.LRSchedule{Peak: base.LR, Min: base.MinLR, Warmup: base.Warmup, Total: base.Steps}
	for step := range 120 {
		if a, b := base.LRAt(step), s.At(step); a != b {
			t.Fatalf("step %d: LRAt %v, models.LRSchedule %v", step, a, b)
		}
	}
}

func TestNewOptimizerHyperParameters(t *testing.T) {
	c := TrainConfig{Optimizer: "adamw", Beta1: 0.8, Eps: 1e-6}
	o, err := c.newOptimizer()
	if err != nil {
		t.Fatal(err)
	}
	if a := o.(*models.AdamW); a.Beta1 != 0.8 || a.Beta2 != DefaultBeta2 || a.Eps != 1e-6 {
		t.Fatalf("AdamW %+v, want beta1 0.8, beta2 %v, eps 1e-6", a, DefaultBeta2)
	}
	c = TrainConfig{Optimizer: "sgd", Momentum: 0.5}
	if o, err = c.newOptimizer(); err != nil || o.(*models.SGD).Momentum != 0.5 {
		t.Fatalf("SGD %+v %v, want momentum 0.5", o, err)
	}
	for _, bad := range []TrainConfig{{Beta1: 1}, {Eps: -1}, {Momentum: math.NaN()}, {LRSchedule: "step"}, {LR: 1, WarmupStart: 2}} {
		if err := bad.checkOptim(); err == nil || !strings.Contains(err.Error(), "--") {
			t.Errorf("%+v: error %v, want one naming the flag", bad, err)
		}
	}
}
