package runconfig

import "fmt"

// Batch is what the batch arithmetic needs to know besides the values:
// which of the three sizes were given (in the file or as flags).
type Batch struct {
	Total                int  // train_batch_size (0: not given)
	Micro, Accum         bool // train_micro_batch_size_per_gpu / microbatch_size / --microbatch-size, gradient_accumulation_steps / microbatches / --microbatches given
	MicroFlag, AccumFlag bool // ... as flags (for the messages)
}

// BatchSizes are the three numbers DeepSpeed ties together:
// train_batch_size = micro × accum × dp.
type BatchSizes struct {
	Micro, Accum, DP int
}

// ResolveBatch checks the batch arithmetic as DeepSpeed does: any two of
// train_batch_size (total, 0 when not given), the micro-batch size and the
// accumulation steps imply the third; all three must agree. cur holds the
// values in effect (given or the flags' defaults), spec which were given.
// With only one of the three given the flag default of another fills in,
// accumulation before micro-batch size.
//
// Both sizes given as flags win over the file's train_batch_size, as every
// flag given does: the total follows from them.
func ResolveBatch(spec Batch, cur BatchSizes) (BatchSizes, error) {
	total := spec.Total
	if total == 0 || (spec.MicroFlag && spec.AccumFlag) {
		return cur, nil
	}
	microName, accumName := "train_micro_batch_size_per_gpu", "gradient_accumulation_steps"
	if spec.MicroFlag {
		microName = "--microbatch-size"
	}
	if spec.AccumFlag {
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

// WorldDP is the data-parallel width of a run of --pp pp and --dp dp (0:
// not given) in a world of size ranks, for the batch arithmetic: dp as
// given, else size / pp where pp divides size, else 1 (the layout's check
// reports a pipeline that does not divide the world).
func WorldDP(size, pp, dp int) int {
	if dp != 0 {
		return dp
	}
	if pp > 0 && size%pp == 0 {
		return size / pp
	}
	return 1
}
