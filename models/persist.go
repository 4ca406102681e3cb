package models

import (
	"encoding/json"
	"fmt"
	"slices"

	"github.com/pplaunch/pplaunch/models/checkpoint"
)

// JSON is the config as the checkpoint manifest records it.
func (c Config) JSON() json.RawMessage {
	b, _ := json.Marshal(c) // a struct of ints, strings and a bool always marshals
	return b
}

// TensorSpecs lists the stage's parameters for checkpoint.Expect.
func (s *Stage) TensorSpecs() []checkpoint.TensorSpec {
	specs := make([]checkpoint.TensorSpec, len(s.params))
	for i, p := range s.params {
		specs[i] = checkpoint.TensorSpec{Name: p.Name, Shape: slices.Clone(p.Shape)}
	}
	return specs
}

// Shard is what the stage saves: host copies of its parameters and of the
// optimizer's slots for them (zeros for a parameter the optimizer has not
// touched yet).
func (s *Stage) Shard(opt Optimizer) checkpoint.Shard { return s.ShardState(opt.State()) }

// ShardState is Shard with the optimizer's state given: under ZeRO stage 1
// put together from every replica's part (StateFromFlat).
func (s *Stage) ShardState(st OptimizerState) checkpoint.Shard {
	sh := checkpoint.Shard{State: map[string][]checkpoint.Tensor{}}
	for _, p := range s.params {
		host := make([]float32, p.Numel())
		s.be.Download(host, p.Value)
		sh.Params = append(sh.Params, checkpoint.Tensor{Name: p.Name, Shape: p.Shape, Data: host})
		for slot, vals := range st.Slots {
			v := vals[p.Name]
			if v == nil {
				v = make([]float32, p.Numel())
			}
			sh.State[slot] = append(sh.State[slot], checkpoint.Tensor{Name: p.Name, Shape: p.Shape, Data: v})
		}
	}
	return sh
}

// LoadShard restores the stage's parameters and the optimizer's state (which
// has taken steps optimizer steps) from a loaded shard. Names and shapes must
// match the stage exactly.
func (s *Stage) LoadShard(sh checkpoint.Shard, opt Optimizer, steps int) error {
	byName := map[string]checkpoint.Tensor{}
	for _, t := range sh.Params {
		byName[t.Name] = t
	}
	if len(byName) != len(s.params) {
		return fmt.Errorf("stage %d: shard has %d parameters, stage has %d", s.index, len(byName), len(s.params))
	}
	for _, p := range s.params {
		t, ok := byName[p.Name]
		if !ok {
			return fmt.Errorf("stage %d: shard has no parameter %s", s.index, p.Name)
		}
		if !slices.Equal(t.Shape, p.Shape) || len(t.Data) != p.Numel() {
			return fmt.Errorf("stage %d: parameter %s has shape %v in the shard, %v in the model", s.index, p.Name, t.Shape, p.Shape)
		}
	}
	// Every slot the optimizer keeps must hold every parameter, at its size: a
	// missing moment would restart from zero with the step count of the
	// checkpoint, silently another run.
	want := opt.State()
	for slot := range want.Slots {
		got := map[string]int{}
		for _, t := range sh.State[slot] {
			got[t.Name] = len(t.Data)
		}
		for _, p := range s.params {
			if n, ok := got[p.Name]; !ok {
				return fmt.Errorf("stage %d: optimizer slot %s has no values for %s", s.index, slot, p.Name)
			} else if n != p.Numel() {
				return fmt.Errorf("stage %d: optimizer slot %s has %d values for %s, which has %d", s.index, slot, n, p.Name, p.Numel())
			}
		}
	}
	st := OptimizerState{Kind: want.Kind, Steps: steps, Slots: map[string]map[string][]float32{}}
	for slot, ts := range sh.State {
		st.Slots[slot] = map[string][]float32{}
		for _, t := range ts {
			st.Slots[slot][t.Name] = t.Data
		}
	}
	if err := opt.SetState(st); err != nil {
		return fmt.Errorf("stage %d: %w", s.index, err)
	}
	for _, p := range s.params {
		s.be.Upload(p.Value, byName[p.Name].Data)
	}
	return nil
}
