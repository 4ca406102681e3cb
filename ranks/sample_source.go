package ranks

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"time"

	"github.com/pplaunch/pplaunch/models"
	"github.com/pplaunch/pplaunch/models/checkpoint"
)

// OpenSampleSource opens the checkpoint pplaunch sample --from names: a
// checkpoint directory, or a root of them (its newest complete one).
func OpenSampleSource(from string) (*SampleSource, error) {
	if _, err := os.Stat(from); errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("--from %s does not exist: give a checkpoint directory, or a train --checkpoint-dir", from)
	}
	dir, m, err := checkpoint.Resolve(from)
	if err != nil {
		return nil, fmt.Errorf("--from: %w", err)
	}
	src, err := SampleSourceOf(dir, m)
	if err != nil {
		return nil, fmt.Errorf("--from %s: %w", dir, err)
	}
	return src, nil
}

// DefaultPrompt is the prompt a sample starts from without --prompt: the
// start of the validation split of the source's corpus, as train's samples.
func (src *SampleSource) DefaultPrompt() ([]int32, error) {
	corpus, err := LoadData(TrainConfig{Model: src.Model, Data: src.Data})
	if err != nil {
		return nil, fmt.Errorf("the default prompt: %w (or give --prompt)", err)
	}
	return DefaultPrompt(corpus, src.Model.Seq), nil
}

// StageSampler is the sampler of rank of a world of size ranks that holds
// stage, stage s of a uniform cut on rank s (SampleSource.LoadStage); a
// world of more than one rank sets its Comm.
func StageSampler(rank, size int, stage *models.Stage, timeout time.Duration) *Sampler {
	sm := &Sampler{Rank: rank, Placement: make([]int, size), Stages: map[int]*models.Stage{rank: stage}, Timeout: timeout}
	for s := range sm.Placement {
		sm.Placement[s] = s
	}
	return sm
}
