package ranks

import (
	"fmt"
	"math"

	"github.com/pplaunch/pplaunch/models"
)

// Learning-rate shapes after the linear warmup (TrainConfig.LRSchedule).
const (
	LRCosine   = "cosine"   // cosine decay from LR to MinLR at the decay's end (the default)
	LRConstant = "constant" // LR from the end of warmup on (DeepSpeed's WarmupLR)
	LRLinear   = "linear"   // linear decay from LR to MinLR at the decay's end (WarmupDecayLR)
)

// LRSchedules lists the shapes, in the order --lr-schedule's help gives them.
var LRSchedules = []string{LRCosine, LRConstant, LRLinear}

// Optimizer hyper-parameters: AdamW's where TrainConfig leaves them at zero;
// SGD's momentum is TrainConfig.Momentum as given (0: plain SGD), this its
// flag's default.
const (
	DefaultBeta1    = 0.9
	DefaultBeta2    = 0.95
	DefaultEps      = 1e-8
	DefaultMomentum = 0.9
)

// newOptimizer is the optimizer c names, with its hyper-parameters.
func (c *TrainConfig) newOptimizer() (models.Optimizer, error) {
	o, err := models.NewOptimizer(c.Optimizer, c.WeightDecay)
	if err != nil {
		return nil, err
	}
	switch o := o.(type) {
	case *models.AdamW:
		o.Beta1, o.Beta2, o.Eps = orDefault(c.Beta1, DefaultBeta1), orDefault(c.Beta2, DefaultBeta2), orDefault(c.Eps, DefaultEps)
	case *models.SGD:
		o.Momentum = c.Momentum
	}
	return o, nil
}

func orDefault(v, def float64) float64 {
	if v == 0 {
		return def
	}
	return v
}

// LRAt is the learning rate of step (from 0): a linear warmup over Warmup
// steps from WarmupStart to LR, then the LRSchedule shape until step
// LRDecaySteps (0: Steps), then MinLR (LR for constant). With WarmupStart 0
// the cosine shape is exactly models.LRSchedule.
func (c *TrainConfig) LRAt(step int) float64 {
	total := c.LRDecaySteps
	if total == 0 {
		total = c.Steps
	}
	if c.WarmupStart != 0 && step < c.Warmup {
		return c.WarmupStart + (c.LR-c.WarmupStart)*float64(step+1)/float64(c.Warmup)
	}
	switch c.LRSchedule {
	case LRConstant:
		if step < c.Warmup {
			return c.LR * float64(step+1) / float64(c.Warmup)
		}
		return c.LR
	case LRLinear:
		if step < c.Warmup {
			return c.LR * float64(step+1) / float64(c.Warmup)
		}
		if step >= total || total <= c.Warmup {
			return c.MinLR
		}
		frac := float64(step-c.Warmup) / float64(total-c.Warmup)
		return c.MinLR + (c.LR-c.MinLR)*(1-frac)
	}
	return models.LRSchedule{Peak: c.LR, Min: c.MinLR, Warmup: c.Warmup, Total: total}.At(step)
}

// checkOptim checks the optimizer and learning-rate settings.
func (c *TrainConfig) checkOptim() error {
	for _, f := range []struct {
		flag string
		v    float64
		ok   bool
	}{
		{"--adam-beta1", c.Beta1, c.Beta1 >= 0 && c.Beta1 < 1}, {"--adam-beta2", c.Beta2, c.Beta2 >= 0 && c.Beta2 < 1},
		{"--adam-eps", c.Eps, c.Eps >= 0}, {"--momentum", c.Momentum, c.Momentum >= 0 && c.Momentum < 1},
		{"--warmup-start-lr", c.WarmupStart, c.WarmupStart >= 0 && c.WarmupStart <= c.LR},
		{"--lr-decay-steps", float64(c.LRDecaySteps), c.LRDecaySteps >= 0},
	} {
		if !f.ok || math.IsNaN(f.v) || math.IsInf(f.v, 0) {
			return fmt.Errorf("%s %g is out of range (betas and momentum in [0, 1), eps and steps not negative, --warmup-start-lr within [0, --lr])", f.flag, f.v)
		}
	}
	switch c.LRSchedule {
	case "", LRCosine, LRConstant, LRLinear:
		return nil
	}
	return fmt.Errorf("--lr-schedule %q: want one of %v", c.LRSchedule, LRSchedules)
}
