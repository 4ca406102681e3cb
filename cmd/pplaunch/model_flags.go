package main

import (
	"github.com/pplaunch/pplaunch/models"
	"github.com/pplaunch/pplaunch/runconfig"
)

// modelFlags choose the model; `bench step` and `train` embed them
// (runconfig.ModelFlags: the flags, the preset and its overrides).
type modelFlags struct{ runconfig.ModelFlags }

// config resolves the preset and overrides into a checked model config.
func (f modelFlags) config() (models.Config, error) { return f.ModelFlags.Config() }

// cutFlags choose how the model is cut into pipeline stages; `train` embeds
// them beside modelFlags (runconfig.CutFlags).
type cutFlags struct{ runconfig.CutFlags }

// cut returns the number of blocks in each of stages stages, reading the
// profile that --balance profile:FILE names.
func (f cutFlags) cut(cfg models.Config, stages int) ([]int, error) {
	return f.CutFlags.Cut(cfg, stages, readProfile)
}
