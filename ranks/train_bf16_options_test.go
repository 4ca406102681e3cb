package ranks

import (
	"errors"
	"testing"

	"github.com/pplaunch/pplaunch/models"
)

// TestBF16ZeroAndRebalanceMatchOneProcess: --precision bf16 with --zero 1
// (pp 2 × dp 2, the optimizer state sharded) and with --rebalance every:3
// (rank 1 slowed, so blocks move between the stages) ends with one bf16
// process's parameters bit for bit: the gradients ZeRO reduces and the
// state a rebalance moves are float32 in every precision, and a moved
// block's activations are bfloat16 on its new stage as on its old.
func TestBF16ZeroAndRebalanceMatchOneProcess(t *testing.T) {
	one := func(cfg TrainConfig) string {
		cfg.PP, cfg.DP, cfg.Micro, cfg.Zero = 1, 1, cfg.Micro*cfg.DP, 0
		cfg.Rebalance, cfg.CheckpointDir = RebalanceOff, t.TempDir()
		if _, errs := trainInProcess(t, cfg, nil); errors.Join(errs...) != nil {
			t.Fatal(errors.Join(errs...))
		}
		return cfg.CheckpointDir
	}
	t.Run("zero1/pp2/dp2", func(t *testing.T) {
		cfg := tiny(t)
		cfg.Precision, cfg.PP, cfg.DP, cfg.Micro, cfg.Zero = models.BF16, 2, 2, 2, 1
		cfg.CheckpointDir = t.TempDir()
		if _, errs := trainInProcess(t, cfg, nil); errors.Join(errs...) != nil {
			t.Fatal(errors.Join(errs...))
		}
		sameParams(t, cfg.CheckpointDir, one(cfg), "one bf16 process")
	})
	t.Run("rebalance/pp2", func(t *testing.T) {
		cfg := tiny(t)
		cfg.Precision, cfg.PP, cfg.Steps, cfg.LRDecaySteps, cfg.Warmup = models.BF16, 2, 6, 6, 2
		cfg.Rebalance, cfg.RebalanceThreshold = "every:3", DefaultRebalanceThreshold
		cfg.CheckpointDir = t.TempDir()
		moves := trainSlowed(t, cfg, nil, 1, slowed)
		if len(moves) == 0 {
			t.Fatal("no rebalance: nothing moved")
		}
		for _, m := range moves {
			t.Logf("%s", m.line())
		}
		sameParams(t, cfg.CheckpointDir, one(cfg), "one bf16 process")
	})
}
