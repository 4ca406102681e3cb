package plan

import "fmt"

// MicroFitsDP says whether m micro-batches per replica give the bits of one
// process over dp replicas: the accumulator's tree matches one process only
// for power-of-two blocks.
func MicroFitsDP(dp, m int) bool { return dp <= 1 || m&(m-1) == 0 }

// CheckZero checks a ZeRO stage given as --zero (train's and plan's).
// DeepSpeed refuses stages 2 and 3 with pipeline parallelism too: they
// shard the gradients a pipeline accumulates over its micro-batches.
func CheckZero(stage int) error {
	switch stage {
	case 0, 1:
		return nil
	case 2, 3:
		return fmt.Errorf("--zero %d: ZeRO stage %d shards the gradients, which a pipeline accumulates over its micro-batches; pipelines allow only stage 0 (off) or 1 (optimizer state sharded over the data-parallel replicas), as DeepSpeed's do: use --zero 1", stage, stage)
	}
	return fmt.Errorf("--zero %d: want 0 (off) or 1 (optimizer state sharded over the data-parallel replicas)", stage)
}
