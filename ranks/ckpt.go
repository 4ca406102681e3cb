package ranks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/pplaunch/pplaunch/models"
	"github.com/pplaunch/pplaunch/models/checkpoint"
)

// Optimizer state tensors are "<param>.<suffix>" in models and "<slot>/<param>"
// in a checkpoint.
var slotOf = map[string]string{"exp_avg": "adam_m", "exp_avg_sq": "adam_v", "momentum": "momentum"}

// shard is what stage s saves: parameters and optimizer state.
func (t *trainer) shard(s int) (checkpoint.Shard, error) {
	st := t.stages[s]
	sh := checkpoint.Shard{State: map[string][]checkpoint.Tensor{}}
	state := t.opts[s].State()
	for _, p := range st.Params() {
		sh.Params = append(sh.Params, checkpoint.Tensor{Name: p.Name, Shape: slices.Clone(p.Shape), Data: slices.Clone(p.Value.Data)})
	}
	for key, v := range state.Tensors {
		i := strings.LastIndexByte(key, '.')
		slot := slotOf[key[i+1:]]
		if i < 0 || slot == "" {
			return sh, fmt.Errorf("stage %d: optimizer state %q has no checkpoint slot", s, key)
		}
		sh.State[slot] = append(sh.State[slot], checkpoint.Tensor{Name: key[:i], Data: v})
	}
	// Each slot in the parameters' order, with their shapes.
	for slot, ts := range sh.State {
		byName := map[string][]float32{}
		for _, x := range ts {
			byName[x.Name] = x.Data
		}
		out := make([]checkpoint.Tensor, 0, len(sh.Params))
		for _, p := range sh.Params {
			d, ok := byName[p.Name]
			if !ok {
				return sh, fmt.Errorf("stage %d: optimizer slot %s lacks %s", s, slot, p.Name)
			}
			out = append(out, checkpoint.Tensor{Name: p.Name, Shape: p.Shape, Data: d})
		}
		sh.State[slot] = out
	}
	return sh, nil
}

func (t *trainer) manifest(step int) (checkpoint.Manifest, error) {
	model, err := json.Marshal(t.cfg.Model)
	return checkpoint.Manifest{
		Step: step, Data: checkpoint.DataPosition{Seed: t.cfg.Seed, Step: step},
		Model: model, Optimizer: t.cfg.Optimizer, NumStages: t.sched.Stages(),
	}, err
}

// save writes the checkpoint after step steps: replica 0's ranks write their
// stages' shards, rank 0 gathers their entries through the store and commits
// the manifest. It returns the directory.
func (t *trainer) save(ctx context.Context, step int) (string, error) {
	dir := checkpoint.StepDir(t.cfg.CheckpointDir, step)
	S := t.sched.Stages()
	key := func(s int) string { return fmt.Sprintf("ckpt/%d/stage/%d", step, s) }
	if t.dRank == 0 {
		for _, s := range t.order {
			sh, err := t.shard(s)
			if err != nil {
				return "", err
			}
			info, err := checkpoint.WriteShard(dir, s, S, sh)
			if err != nil {
				return "", fmt.Errorf("checkpoint step %d: %w", step, err)
			}
			b, _ := json.Marshal(info)
			if err := t.job.Store.Set(ctx, key(s), b); err != nil {
				return "", fmt.Errorf("checkpoint step %d: publish stage %d: %w", step, s, err)
			}
		}
	}
	if t.job.Rank != 0 {
		return dir, nil
	}
	m, err := t.manifest(step)
	if err != nil {
		return "", err
	}
	for s := range S {
		wctx, cancel := t.waitCtx(ctx)
		b, err := t.job.Store.Get(wctx, key(s))
		cancel()
		if err != nil {
			return "", fmt.Errorf("checkpoint step %d: waiting for stage %d's shard (rank %d): %w", step, s, t.sched.Placement[s], err)
		}
		var info checkpoint.StageInfo
		if err := json.Unmarshal(b, &info); err != nil {
			return "", fmt.Errorf("checkpoint step %d: stage %d entry: %w", step, s, err)
		}
		m.Stages = append(m.Stages, info)
	}
	if err := checkpoint.Commit(dir, m); err != nil {
		return "", fmt.Errorf("checkpoint step %d: %w", step, err)
	}
	return dir, nil
}

// restore loads the newest complete checkpoint under --checkpoint-dir when
// resuming (--resume, or any restart) and returns the step to continue from.
// The checkpoint may have been saved with any stage layout.
func (t *trainer) restore(context.Context) (int, error) {
	c := t.cfg
	if c.CheckpointDir == "" || (!c.Resume && t.job.Restart == 0) {
		return 0, nil
	}
	dir, m, err := checkpoint.Latest(c.CheckpointDir)
	if errors.Is(err, checkpoint.ErrNoCheckpoint) {
		t.logf("no complete checkpoint under %s: starting from step 0", c.CheckpointDir)
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	if m.Data.Seed != c.Seed {
		return 0, fmt.Errorf("checkpoint %s was trained with --seed %d, not %d", dir, m.Data.Seed, c.Seed)
	}
	want, err := t.manifest(0)
	if err != nil {
		return 0, err
	}
	var specs []checkpoint.TensorSpec
	for _, p := range c.Model.Params() {
		specs = append(specs, checkpoint.TensorSpec{Name: p.Name, Shape: p.Shape})
	}
	_, sh, err := checkpoint.Load(dir, checkpoint.Expect{Model: want.Model, Optimizer: c.Optimizer, Params: specs})
	if err != nil {
		return 0, err
	}
	index := map[string]int{}
	for i, p := range sh.Params {
		index[p.Name] = i
	}
	suffix := map[string]string{}
	for suf, slot := range slotOf {
		suffix[slot] = suf
	}
	for _, s := range t.order {
		st := models.OptimizerState{Kind: c.Optimizer, Steps: m.Step, Tensors: map[string][]float32{}}
		for _, p := range t.stages[s].Params() {
			i := index[p.Name]
			copy(p.Value.Data, sh.Params[i].Data)
			for slot, ts := range sh.State {
				st.Tensors[p.Name+"."+suffix[slot]] = ts[i].Data
			}
		}
		if err := t.opts[s].SetState(st); err != nil {
			return 0, fmt.Errorf("checkpoint %s: stage %d: %w", dir, s, err)
		}
	}
	t.logf("resumed from %s (step %d)", dir, m.Step)
	return m.Data.Step, nil
}

func (t *trainer) logf(format string, args ...any) {
	if t.job.Logf != nil && t.job.Rank == 0 {
		t.job.Logf(format, args...)
	}
}
