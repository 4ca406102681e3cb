package ranks

import (
	"encoding/json"
	"fmt"

	"github.com/pplaunch/pplaunch/models"
	"github.com/pplaunch/pplaunch/models/checkpoint"
	"github.com/pplaunch/pplaunch/models/tensor"
)

// SampleSource is a checkpoint opened for sampling (pplaunch sample): its
// model, and from the saved configuration the seed and corpus of the run
// that wrote it, so samples from it start as that run's did.
type SampleSource struct {
	Dir      string
	Manifest *checkpoint.Manifest
	Model    models.Config
	Seed     uint64
	Data     string // the run's --data ("" the embedded corpus)
}

// SampleSourceOf reads checkpoint dir's manifest m (checkpoint.Resolve's).
func SampleSourceOf(dir string, m *checkpoint.Manifest) (*SampleSource, error) {
	src := &SampleSource{Dir: dir, Manifest: m, Seed: m.Data.Seed}
	if err := json.Unmarshal(m.Model, &src.Model); err != nil {
		return nil, fmt.Errorf("model in the manifest: %w", err)
	}
	if err := src.Model.Validate(); err != nil {
		return nil, err
	}
	var extra ManifestExtra
	if len(m.Extra) > 0 && json.Unmarshal(m.Extra, &extra) == nil && len(extra.Config) > 0 {
		var run struct{ Data string }
		if json.Unmarshal(extra.Config, &run) == nil {
			src.Data = run.Data
		}
	}
	return src, nil
}

// LoadStage builds stage index of a uniform cut into stages on the CPU and
// loads its parameters from the checkpoint, whatever layout saved it.
func (src *SampleSource) LoadStage(index, stages int) (*models.Stage, error) {
	cut, err := models.Partition(src.Model, stages, models.BalanceUniform)
	if err != nil {
		return nil, fmt.Errorf("%d ranks: %w", stages, err)
	}
	be, err := tensor.NewCPUFromEnv()
	if err != nil {
		return nil, err
	}
	st, err := models.NewStage(src.Model, cut, index, be, models.StageOptions{})
	if err != nil {
		return nil, err
	}
	_, sh, err := checkpoint.Gather(src.Dir, checkpoint.Expect{Model: src.Manifest.Model, Params: st.TensorSpecs()})
	if err != nil {
		return nil, fmt.Errorf("stage %d from %s: %w", index, src.Dir, err)
	}
	opt, err := models.NewOptimizer(src.Manifest.Optimizer, 0)
	if err != nil {
		return nil, fmt.Errorf("checkpoint %s: %w", src.Dir, err)
	}
	if err := st.LoadShard(sh, opt, src.Manifest.Step); err != nil {
		return nil, fmt.Errorf("checkpoint %s: %w", src.Dir, err)
	}
	return st, nil
}
