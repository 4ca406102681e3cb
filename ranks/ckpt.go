package ranks

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/pplaunch/pplaunch/collective"
	"github.com/pplaunch/pplaunch/models/checkpoint"
)

func (t *trainer) manifest(step int) checkpoint.Manifest {
	m := checkpoint.Manifest{
		Step: step, Data: checkpoint.DataPosition{Seed: t.cfg.Seed, Step: step},
		Model: t.cfg.Model.JSON(), Optimizer: t.cfg.Optimizer, NumStages: t.sched.Stages(),
	}
	if len(t.cfg.Effective) > 0 {
		// The run's whole configuration, as --config reads it: what
		// `pplaunch sample` and a person need to know how it was trained.
		m.Extra, _ = json.Marshal(ManifestExtra{Config: t.cfg.Effective})
	}
	return m
}

// ManifestExtra is what pplaunch train keeps in a checkpoint manifest's
// "extra" object.
type ManifestExtra struct {
	Config json.RawMessage `json:"config,omitempty"`
}

// save writes the checkpoint after step steps: replica 0's ranks write their
// stages' shards (under ZeRO stage 1 with the optimizer state the other
// replicas send them), rank 0 gathers their entries through the store and commits
// the manifest. It returns the directory.
func (t *trainer) save(ctx context.Context, step int) (string, error) {
	dir := checkpoint.StepDir(t.cfg.CheckpointDir, step)
	S := t.sched.Stages()
	key := func(s int) string { return fmt.Sprintf("ckpt/%d/stage/%d", step, s) }
	for _, s := range t.order {
		st, write, err := t.optimizerState(ctx, step, s)
		if err != nil {
			return "", fmt.Errorf("checkpoint step %d: %w", step, err)
		}
		if write {
			sh := t.stages[s].ShardState(st)
			if err := checkShard(s, sh); err != nil {
				return "", fmt.Errorf("checkpoint step %d: %w", step, err)
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
	// Every save of an earlier step is over (the ranks met in this step's
	// all-reduce after it): what is left of one was killed.
	if _, err := checkpoint.CleanTemps(t.cfg.CheckpointDir, dir); err != nil {
		return "", fmt.Errorf("checkpoint step %d: cleaning up after killed saves: %w", step, err)
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

// restore loads the checkpoint rank 0 chooses (resume) and returns the step
// to continue from. The checkpoint may have been saved with any stage layout.
func (t *trainer) restore(ctx context.Context) (int, error) {
	c := t.cfg
	if c.CheckpointDir == "" {
		return 0, nil
	}
	if t.dRank == 0 {
		// This rank writes shards: find a root it cannot write now, not at the
		// first save.
		if err := checkpoint.CheckWritable(c.CheckpointDir); err != nil {
			return 0, fmt.Errorf("--checkpoint-dir %s cannot hold checkpoints: %w", c.CheckpointDir, err)
		}
	}
	p, err := t.resumePoint(ctx)
	if err != nil {
		return 0, err
	}
	if p.Step == 0 {
		return 0, nil
	}
	dir, m, err := p.open(c.CheckpointDir)
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

// resumeKey holds rank 0's choice of checkpoint in the store (this attempt's
// namespace).
const resumeKey = "train/resume"

// resumeChoice is the checkpoint rank 0 chose: its step (0: start afresh)
// and the SHA-256 of its manifest, so that a rank whose filesystem shows
// another version of it (a stale cache of a shared filesystem) refuses it.
type resumeChoice struct {
	Step     int    `json:"step"`
	Manifest string `json:"manifest_sha256,omitempty"`
}

// resumePlan is what rank 0 does with the checkpoint root before step 0.
type resumePlan struct {
	Clear bool // remove the old run's checkpoints (--overwrite)
	Step  int  // resume from this complete checkpoint; 0: start afresh
}

// planResume decides, from the complete checkpoints already in root (steps,
// increasing), whether the run resumes (--resume, or any restart), starts
// afresh, clears the root first (--overwrite), or is refused: a new run into a
// root holding another run's checkpoints would overwrite some and leave the
// newer ones for a later --resume to mix in.
func planResume(root string, resume, overwrite bool, steps []int) (resumePlan, error) {
	switch {
	case resume && len(steps) > 0:
		return resumePlan{Step: steps[len(steps)-1]}, nil
	case resume:
		return resumePlan{}, nil
	case overwrite:
		return resumePlan{Clear: true}, nil
	case len(steps) > 0:
		return resumePlan{}, fmt.Errorf("--checkpoint-dir %s holds %d checkpoints of another run (the newest %s): continue that run with --resume, choose another directory, or pass --overwrite to remove them first",
			root, len(steps), filepath.Base(checkpoint.StepDir(root, steps[len(steps)-1])))
	}
	return resumePlan{}, nil
}

// CheckCheckpointDir checks, before any rank starts, that a run's
// --checkpoint-dir can be written and that a new run (no --resume) would not
// mix with another run's checkpoints there. It changes nothing but creating
// the directory.
func CheckCheckpointDir(c TrainConfig) error {
	if c.CheckpointDir == "" {
		return nil
	}
	if err := checkpoint.CheckWritable(c.CheckpointDir); err != nil {
		return fmt.Errorf("--checkpoint-dir %s cannot hold checkpoints: %w", c.CheckpointDir, err)
	}
	steps, err := checkpoint.Complete(c.CheckpointDir)
	if err != nil {
		return fmt.Errorf("--checkpoint-dir %s: %w", c.CheckpointDir, err)
	}
	_, err = planResume(c.CheckpointDir, c.Resume, c.Overwrite, steps)
	return err
}

// resumePoint is rank 0's choice of checkpoint, which it makes (cleaning up
// after killed saves and, with --overwrite, clearing the old run first) and
// publishes; every other rank waits for it. No rank writes to the root
// before every rank has it.
func (t *trainer) resumePoint(ctx context.Context) (resumeChoice, error) {
	wctx, cancel := t.waitCtx(ctx)
	defer cancel()
	if t.job.Rank != 0 {
		b, err := t.job.Store.Get(wctx, resumeKey)
		if err != nil {
			return resumeChoice{}, &collective.PeerError{Peer: 0, Err: fmt.Errorf("resume: waiting for rank 0's choice of checkpoint: %w", err)}
		}
		var p resumeChoice
		if err := json.Unmarshal(b, &p); err != nil {
			return resumeChoice{}, fmt.Errorf("resume: rank 0's choice %q: %w", b, err)
		}
		return p, nil
	}
	p, err := t.chooseResume()
	if err != nil {
		return p, err
	}
	b, _ := json.Marshal(p)
	if err := t.job.Store.Set(wctx, resumeKey, b); err != nil {
		return p, fmt.Errorf("resume: publish the choice of checkpoint: %w", err)
	}
	return p, nil
}

// chooseResume is rank 0's side of resumePoint.
func (t *trainer) chooseResume() (resumeChoice, error) {
	c := t.cfg
	root := c.CheckpointDir
	if removed, err := checkpoint.CleanTemps(root, ""); err != nil {
		return resumeChoice{}, fmt.Errorf("--checkpoint-dir %s: cleaning up after killed saves: %w", root, err)
	} else if len(removed) > 0 {
		t.logf("removed %d temporary files of killed checkpoint saves under %s", len(removed), root)
	}
	steps, err := checkpoint.Complete(root)
	if err != nil {
		return resumeChoice{}, fmt.Errorf("--checkpoint-dir %s: %w", root, err)
	}
	plan, err := planResume(root, c.Resume || t.job.Restart > 0, c.Overwrite, steps)
	if err != nil {
		return resumeChoice{}, err
	}
	if plan.Clear && len(steps) > 0 {
		if err := checkpoint.Clear(root); err != nil {
			return resumeChoice{}, fmt.Errorf("--overwrite: %w", err)
		}
		t.logf("--overwrite: removed the %d checkpoints under %s", len(steps), root)
	}
	if plan.Step == 0 {
		if c.Resume || t.job.Restart > 0 {
			t.logf("no complete checkpoint under %s: starting from step 0", root)
		}
		return resumeChoice{}, nil
	}
	dir := checkpoint.StepDir(root, plan.Step)
	b, err := os.ReadFile(filepath.Join(dir, checkpoint.ManifestName))
	if err != nil {
		return resumeChoice{}, fmt.Errorf("resume: %w", err)
	}
	sum := sha256.Sum256(b)
	return resumeChoice{Step: plan.Step, Manifest: hex.EncodeToString(sum[:])}, nil
}

// open reads the chosen checkpoint's manifest under root and checks that it
// is the one rank 0 chose.
func (p resumeChoice) open(root string) (string, *checkpoint.Manifest, error) {
	dir := checkpoint.StepDir(root, p.Step)
	fail := func(err error) (string, *checkpoint.Manifest, error) {
		return "", nil, fmt.Errorf("rank 0 chose checkpoint %s (step %d); this rank cannot use it: %w", dir, p.Step, err)
	}
	b, err := os.ReadFile(filepath.Join(dir, checkpoint.ManifestName))
	if err != nil {
		return fail(err)
	}
	if sum := sha256.Sum256(b); hex.EncodeToString(sum[:]) != p.Manifest {
		return fail(fmt.Errorf("its manifest has SHA-256 %x here, %s on rank 0: this node sees another version of the directory (a stale cache of a shared filesystem?)", sum, p.Manifest))
	}
	m, err := checkpoint.ReadManifest(dir)
	if err != nil {
		return fail(err)
	}
	if m.Step != p.Step {
		return fail(fmt.Errorf("its manifest says step %d", m.Step))
	}
	return dir, m, nil
}
