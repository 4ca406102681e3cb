package main

import "fmt"

// batchSizes are the three numbers DeepSpeed ties together:
// train_batch_size = micro × accum × dp.
type batchSizes struct {
	Micro, Accum, DP int
}

// resolveBatch checks the batch arithmetic as DeepSpeed does: any two of
// train_batch_size (total, 0 when not given), the micro-batch size and the
// accumulation steps imply the third; all three must agree. cur holds the
// values in effect (given or the flags' defaults), spec which were given.
// With only one of the three given the flag default of another fills in,
// accumulation before micro-batch size.
//
// Both sizes given as flags win over the file's train_batch_size, as every
// flag given does: the total follows from them.
func resolveBatch(spec batchSpec, cur batchSizes) (batchSizes, error) {
	total := spec.Total
	if total == 0 || (spec.MicroFlag && spec.AccumF) {
		return cur, nil
	}
	microName, accumName := "train_micro_batch_size_per_gpu", "gradient_accumulation_steps"
	if spec.MicroFlag {
		microName = "--microbatch-size"
	}
	if spec.AccumF {
		accumName = "--microbatches"
	}
	dpName := fmt.Sprintf("dp %d", cur.DP)
	switch {
	case spec.Micro && spec.Accum:
		if got := cur.Micro * cur.Accum * cur.DP; got != total {
			return cur, fmt.Errorf("train_batch_size %d != %s %d × %s %d × %s = %d: change one of them",
				total, microName, cur.Micro, accumName, cur.Accum, dpName, got)
		}
	case spec.Micro:
		per := cur.Micro * cur.DP
		if total%per != 0 {
			return cur, fmt.Errorf("train_batch_size %d is not a multiple of %s %d × %s = %d: no whole %s fits",
				total, microName, cur.Micro, dpName, per, accumName)
		}
		cur.Accum = total / per
	default: // accumulation given, or neither (the --microbatches default)
		per := cur.Accum * cur.DP
		if total%per != 0 {
			return cur, fmt.Errorf("train_batch_size %d is not a multiple of %s %d × %s = %d: no whole %s fits",
				total, accumName, cur.Accum, dpName, per, microName)
		}
		cur.Micro = total / per
	}
	return cur, nil
}

// resolveWorld finishes what the file leaves to the world's size (0: not
// known yet, as on one agent of several nodes: nothing is done): the batch
// arithmetic, with dp as the world and the pipeline give it (Plan reports a
// pipeline that does not divide the world).
func (c *trainCmd) resolveWorld(size int) error {
	if size == 0 || c.Config == "" {
		return nil
	}
	dp := c.DP
	if dp == 0 {
		dp = 1
		if c.PP > 0 && size%c.PP == 0 {
			dp = size / c.PP
		}
	}
	b, err := resolveBatch(c.batch, batchSizes{Micro: c.MicrobatchSize, Accum: c.Microbatches, DP: dp})
	if err != nil {
		return fmt.Errorf("%s: %w", c.Config, err)
	}
	c.MicrobatchSize, c.Microbatches = b.Micro, b.Accum
	return nil
}
