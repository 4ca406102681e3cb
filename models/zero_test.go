package models

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/pplaunch/pplaunch/models/tensor"
)

// shardStage is a small stage of odd sizes (its layout divides by nothing
// useful), with random gradients.
func shardStage(t *testing.T, seed uint64) *Stage {
	t.Helper()
	be, err := tensor.NewCPU("")
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{Kind: "gpt", Vocab: 31, Layers: 1, Width: 6, Heads: 2, Seq: 5, Tied: true}
	st, err := NewStage(cfg, []int{1}, 0, be, StageOptions{Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(seed, 1))
	for i := range st.GradBuffer() {
		st.GradBuffer()[i] = float32(r.NormFloat64())
	}
	return st
}

// TestShardedMatchesWhole: optimizers owning 3 parts of a stage's layout
// (cut inside parameters) leave, over three steps, the parameters and the
// state of one optimizer of the whole stage, bit for bit; their state bytes
// add up to its; and the whole state, laid out flat from the parts and
// split again, restores parts that continue identically.
func TestShardedMatchesWhole(t *testing.T) {
	for _, kind := range []string{"adamw", "sgd"} {
		t.Run(kind, func(t *testing.T) {
			whole, parts := shardStage(t, 1), shardStage(t, 1)
			n := whole.GradTensor().Len()
			ref, _ := NewOptimizer(kind, 0.1)
			bounds := []int{0, n / 3, n/3 + 7, n}
			var shards []*Sharded
			for k := range 3 {
				inner, _ := NewOptimizer(kind, 0.1)
				shards = append(shards, NewSharded(inner, parts.Params(), bounds[k], bounds[k+1]))
			}
			step := func() {
				if err := ref.Step(whole.Params(), 1e-2, 0.5); err != nil {
					t.Fatal(err)
				}
				for _, o := range shards {
					if err := o.Step(parts.Params(), 1e-2, 0.5); err != nil {
						t.Fatal(err)
					}
				}
			}
			for range 3 {
				step()
			}
			if !slices.Equal(whole.ValueTensor().Data, parts.ValueTensor().Data) {
				t.Fatal("the parts' updates differ from the whole's")
			}
			var bytes int64
			flat := map[string][]float32{}
			for k, o := range shards {
				bytes += o.StateBytes()
				f, err := parts.FlatState(o.State(), bounds[k], bounds[k+1])
				if err != nil {
					t.Fatal(err)
				}
				for slot, v := range f {
					flat[slot] = append(flat[slot], v...)
				}
			}
			if bytes != ref.StateBytes() || bytes == 0 {
				t.Errorf("the parts hold %d bytes of state, the whole %d", bytes, ref.StateBytes())
			}
			st, err := parts.StateFromFlat(ref.State().Kind, ref.State().Steps, flat)
			if err != nil {
				t.Fatal(err)
			}
			if got, want := fmt.Sprint(st), fmt.Sprint(ref.State()); got != want {
				t.Fatal("the parts' state, put together, differs from the whole's")
			}
			// Restore the parts from the whole state and go on.
			for _, o := range shards {
				if err := o.SetState(st); err != nil {
					t.Fatal(err)
				}
			}
			step()
			if !slices.Equal(whole.ValueTensor().Data, parts.ValueTensor().Data) {
				t.Fatal("after a restore, the parts' updates differ from the whole's")
			}
		})
	}
}

// TestShardedRefuses: a part's state of the wrong length, and parameters
// the optimizer was not made for, are errors naming them.
func TestShardedRefuses(t *testing.T) {
	st, other := shardStage(t, 1), shardStage(t, 2)
	o := NewSharded(NewAdamW(0), st.Params(), 0, 10)
	name := st.Params()[0].Name
	bad := OptimizerState{Kind: "adamw", Slots: map[string]map[string][]float32{SlotAdamM: {name: make([]float32, 3)}, SlotAdamV: {name: make([]float32, 3)}}}
	if err := o.SetState(bad); err == nil {
		t.Error("a state of 3 values for a whole parameter was taken")
	}
	if err := o.Step(other.Params(), 1e-3, 1); err == nil {
		t.Error("another stage's parameters were taken")
	}
	if _, err := st.FlatState(bad, 0, 10); err == nil {
		t.Error("FlatState took 3 values for a parameter neither whole nor the part")
	}
}
