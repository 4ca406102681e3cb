package plan

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
)

// ProfileVersion is the version of the profile format Profile writes.
const ProfileVersion = 1

// Profile is what `train --profile FILE` writes: the costs of one model on
// one machine, measured while training, per model unit (the embedding, each
// block, the head) and per stage boundary, as medians over the steps after
// the first (warm-up). docs/schedules.md describes the format; plan and
// --balance profile:FILE read it.
type Profile struct {
	Version        int            `json:"version"`
	Model          ProfileModel   `json:"model"`
	Backend        string         `json:"backend"`
	Precision      string         `json:"precision,omitempty"` // --precision of the measuring run ("": fp32)
	MicroBatchSize int            `json:"microbatch_size"`     // sequences per micro-batch the times are for
	Recompute      bool           `json:"recompute"`
	Layout         ProfileLayout  `json:"layout"`
	Steps          int            `json:"steps"`        // steps the medians are over
	WarmupSteps    int            `json:"warmup_steps"` // steps left out before them
	StepS          float64        `json:"step_s"`       // median step time, seconds
	Units          []UnitProfile  `json:"units"`
	Boundaries     []BoundaryCost `json:"boundaries"`
	Stages         []StageProfile `json:"stages"`
	Ranks          []RankProfile  `json:"ranks"`
	Optimizer      string         `json:"optimizer"`
	OptimizerState int            `json:"optimizer_state_per_param"` // float32 values the optimizer keeps per parameter
}

// ProfileModel is the model the profile measured.
type ProfileModel struct {
	Kind   string `json:"kind"`
	Vocab  int    `json:"vocab"`
	Layers int    `json:"layers"`
	Width  int    `json:"width"`
	Heads  int    `json:"heads"`
	Seq    int    `json:"seq"`
	Tied   bool   `json:"tied"`
	Params int64  `json:"params"`
}

// ProfileLayout is the run that measured it.
type ProfileLayout struct {
	PP           int    `json:"pp"`
	DP           int    `json:"dp"`
	Schedule     string `json:"schedule"`
	Virtual      int    `json:"virtual"`
	Microbatches int    `json:"microbatches"`
	Cut          []int  `json:"cut"` // blocks per stage
}

// UnitProfile is one model unit's cost for one micro-batch.
type UnitProfile struct {
	Unit   int    `json:"unit"` // -1 the embedding, 0..layers-1 the blocks, layers the final LayerNorm and head
	Name   string `json:"name"`
	Params int64  `json:"params"`
	// Forward, input-gradient and weight-gradient pass, seconds (with
	// recomputation the input-gradient pass includes the recomputed forward).
	F float64 `json:"forward_s"`
	I float64 `json:"backward_input_s"`
	W float64 `json:"backward_weight_s"`
	// ActivationBytes is what the unit keeps from its forward to its backward
	// for one micro-batch without recomputation.
	ActivationBytes int64 `json:"activation_bytes"`
	// AfterInputBytes is what it still keeps after the input-gradient pass,
	// for the weight pass of a split backward.
	AfterInputBytes int64 `json:"activation_bytes_after_input_backward"`
}

// BoundaryCost is the transfer between stage After and After+1: the bytes
// of one micro-batch's activation (its gradient has the same size) and the
// median time of one transfer each way. A time is an upper bound of the
// wire time: the shorter of the sender's span (posted to seen complete) and
// the receiver's (from when both were posted to when the data was used).
type BoundaryCost struct {
	After    int     `json:"after_stage"`
	Bytes    int64   `json:"bytes"`
	Local    bool    `json:"local,omitempty"` // both stages on one rank: no transfer, times 0
	Forward  float64 `json:"forward_s"`
	Backward float64 `json:"backward_s"`
}

// StageProfile is one stage of the measuring run.
type StageProfile struct {
	Stage  int `json:"stage"`
	Rank   int `json:"rank"`
	Blocks int `json:"blocks"`
	// ActivationBytes is what one micro-batch left on the stage after its
	// forward (with recomputation: the stage's input only).
	ActivationBytes int64 `json:"activation_bytes_per_microbatch"`
}

// RankProfile is one pipeline rank's measured peak of live activations.
type RankProfile struct {
	Rank                int   `json:"rank"`
	PeakActivationBytes int64 `json:"peak_activation_bytes"`
}

// Write writes p as indented JSON.
func (p *Profile) Write(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(p)
}

// ReadProfile reads a profile that Write wrote and checks that it is whole:
// a unit for the embedding, every block and the head, non-negative finite
// times.
func ReadProfile(r io.Reader) (*Profile, error) {
	var p Profile
	if err := json.NewDecoder(r).Decode(&p); err != nil {
		return nil, fmt.Errorf("profile: %w", err)
	}
	if p.Version != ProfileVersion {
		return nil, fmt.Errorf("profile: version %d, this pplaunch reads version %d (write it again with train --profile)", p.Version, ProfileVersion)
	}
	L := p.Model.Layers
	if L < 1 || len(p.Units) != L+2 {
		return nil, fmt.Errorf("profile: %d units for a model of %d layers; want %d (the embedding, every block, the head)", len(p.Units), L, L+2)
	}
	for i, u := range p.Units {
		if u.Unit != i-1 {
			return nil, fmt.Errorf("profile: unit %d at position %d, want %d (units in model order)", u.Unit, i, i-1)
		}
		for _, x := range []float64{u.F, u.I, u.W} {
			if !(x >= 0) || x > 1e9 {
				return nil, fmt.Errorf("profile: unit %d (%s) has a time %v; want a finite time >= 0", u.Unit, u.Name, x)
			}
		}
		if u.ActivationBytes < 0 || u.Params < 0 {
			return nil, fmt.Errorf("profile: unit %d (%s) has negative bytes or parameters", u.Unit, u.Name)
		}
	}
	if p.MicroBatchSize < 1 {
		return nil, fmt.Errorf("profile: microbatch_size %d; want at least 1", p.MicroBatchSize)
	}
	return &p, nil
}

// Transfer returns the median transfer time and bytes over the profile's
// boundaries (0 and 0 without any: a one-stage run).
func (p *Profile) Transfer() (seconds float64, bytes int64) {
	var t []float64
	for _, b := range p.Boundaries {
		if b.Local {
			continue
		}
		t = append(t, b.Forward, b.Backward)
		bytes = max(bytes, b.Bytes)
	}
	return Median(t), bytes
}

// Median is the statistic a profile keeps of repeated measurements: the
// median of xs (0 when empty); xs is not changed.
func Median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Sorted(slices.Values(xs))
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// World is the number of ranks of the profiled run.
func (p *Profile) World() int { return p.Layout.PP * p.Layout.DP }

// GlobalBatch is the sequences per step of the profiled run.
func (p *Profile) GlobalBatch() int {
	return p.Layout.DP * p.Layout.Microbatches * p.MicroBatchSize
}
