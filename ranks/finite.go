package ranks

import (
	"fmt"
	"maps"
	"math"
	"slices"

	"github.com/pplaunch/pplaunch/models/checkpoint"
)

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// checkFinite refuses a NaN or infinite value of a real-valued flag: the
// comparisons that check their ranges are all false for NaN.
func (c *TrainConfig) checkFinite() error {
	for _, f := range []struct {
		flag string
		v    float64
	}{{"--lr", c.LR}, {"--min-lr", c.MinLR}, {"--weight-decay", c.WeightDecay}, {"--clip", c.Clip}} {
		if !finite(f.v) {
			return fmt.Errorf("%s %v: want a finite number", f.flag, f.v)
		}
	}
	return nil
}

// checkStep stops the run at the step whose loss or global gradient norm is
// not finite, before the optimizer applies it: every rank has the same
// all-reduced values, so every rank stops at the same step.
func checkStep(step int, loss, norm float64) error {
	if finite(loss) && finite(norm) {
		return nil
	}
	return fmt.Errorf("step %d: loss %v, gradient norm %v: training diverged: stopped before applying it, with no checkpoint after step %d (lower --lr, set --clip, or resume from an earlier checkpoint)", step, loss, norm, step)
}

// checkShard refuses to save a shard holding a NaN or infinite value (the
// weights of a diverged step, or optimizer state overflowed by a huge
// learning rate), naming the first such tensor.
func checkShard(stage int, sh checkpoint.Shard) error {
	bad := func(ts []checkpoint.Tensor, slot string) error {
		for _, t := range ts {
			for i, v := range t.Data {
				if f := float64(v); !finite(f) {
					return fmt.Errorf("stage %d: %s%s[%d] is %v: not saving non-finite weights (training diverged; lower --lr or set --clip)", stage, slot, t.Name, i, f)
				}
			}
		}
		return nil
	}
	if err := bad(sh.Params, ""); err != nil {
		return err
	}
	for _, slot := range slices.Sorted(maps.Keys(sh.State)) {
		if err := bad(sh.State[slot], slot+"/"); err != nil {
			return err
		}
	}
	return nil
}
