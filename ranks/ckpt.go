package ranks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/pplaunch/pplaunch/models/checkpoint"
)

func (t *trainer) manifest(step int) checkpoint.Manifest {
	return checkpoint.Manifest{
		Step: step, Data: checkpoint.DataPosition{Seed: t.cfg.Seed, Step: step},
		Model: t.cfg.Model.JSON(), Optimizer: t.cfg.Optimizer, NumStages: t.sched.Stages(),
	}
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
			info, err := checkpoint.WriteShard(dir, s, S, t.stages[s].Shard(t.opts[s]))
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
	m := t.manifest(step)
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
		return 0, fmt.Errorf("resume: %w", err)
	}
	if m.Data.Seed != c.Seed {
		return 0, fmt.Errorf("checkpoint %s was trained with --seed %d, not %d", dir, m.Data.Seed, c.Seed)
	}
	// Each stage reads only the shards holding its parameters, so the
	// checkpoint may come from any stage layout.
	for _, st := range t.order {
		var specs []checkpoint.TensorSpec
		for _, p := range t.stages[st].Params() {
			specs = append(specs, checkpoint.TensorSpec{Name: p.Name, Shape: p.Shape})
		}
		_, sh, err := checkpoint.Gather(dir, checkpoint.Expect{Model: c.Model.JSON(), Optimizer: c.Optimizer, Params: specs})
		if err != nil {
			return 0, fmt.Errorf("resume stage %d from %s: %w", st, dir, err)
		}
		if err := t.stages[st].LoadShard(sh, t.opts[st], m.Step); err != nil {
			return 0, fmt.Errorf("checkpoint %s: %w", dir, err)
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
