package report

import (
	"fmt"

	"github.com/pplaunch/pplaunch/ranks"
	"github.com/pplaunch/pplaunch/schedules"
)

// runTitle is the run in one line, after "train: " on the console and at the
// top of the live view: the model, the data, the layout, the schedule, the
// batch, the length and where it computes.
func runTitle(cfg ranks.TrainConfig, world int, compute string) string {
	v := ""
	if n, err := schedules.Resolve(cfg.Schedule, cfg.PP, cfg.Micro, cfg.Virtual); err == nil && cfg.Schedule == "interleaved" {
		v = fmt.Sprintf(" v=%d", n)
	}
	return fmt.Sprintf("%s (%d parameters) on %s; %d ranks = pp %d × dp %d%s; schedule %s%s, %d micro-batches of %d sequences; %d steps; compute %s",
		cfg.Model, cfg.Model.NumParams(), dataName(cfg.Data), world, cfg.PP, cfg.DP, zeroNote(cfg.Zero, cfg.DP), cfg.Schedule, v, cfg.Micro, cfg.MicroSize, cfg.Steps, compute)
}

func dataName(p string) string {
	if p == "" {
		return "the embedded corpus"
	}
	return p
}

// zeroNote is what the start line says of --zero.
func zeroNote(zero, dp int) string {
	switch {
	case zero == 0:
		return ""
	case dp == 1:
		return fmt.Sprintf(" (ZeRO stage %d shards nothing on one replica)", zero)
	}
	return fmt.Sprintf(" (ZeRO stage %d: each replica keeps 1/%d of the optimizer state)", zero, dp)
}
