package ranks

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/pplaunch/pplaunch/collective"
	"github.com/pplaunch/pplaunch/models/checkpoint"
)

// checkpointer writes the rank's checkpoints (save, and after a failed step
// salvage.go's save from memory), chooses the one to resume from (rank 0,
// for every rank: resumePoint) and loads it (restore). The stages it saves
// and loads are given to each call.
type checkpointer struct {
	*rankJob
}

// manifest is the manifest of the checkpoint after step steps, without its
// stages' entries.
func (ck *checkpointer) manifest(step int) checkpoint.Manifest {
	m := checkpoint.Manifest{
		Step: step, Data: checkpoint.DataPosition{Seed: ck.cfg.Seed, Step: step},
		Model: ck.cfg.Model.JSON(), Optimizer: ck.cfg.Optimizer, NumStages: ck.sched.Stages(),
	}
	if len(ck.cfg.Effective) > 0 {
		// The run's whole configuration, as --config reads it: what
		// `pplaunch sample` and a person need to know how it was trained.
		m.Extra, _ = json.Marshal(ManifestExtra{Config: ck.cfg.Effective})
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
func (ck *checkpointer) save(ctx context.Context, step int, rs *rankStages) (string, error) {
	dir := checkpoint.StepDir(ck.cfg.CheckpointDir, step)
	S := ck.sched.Stages()
	key := func(s int) string { return fmt.Sprintf("ckpt/%d/stage/%d", step, s) }
	for _, s := range ck.order {
		st, write, err := rs.optimizerState(ctx, step, s)
		if err != nil {
			return "", fmt.Errorf("checkpoint step %d: %w", step, err)
		}
		if write {
			sh := rs.stages[s].ShardState(st)
			if err := checkShard(s, sh); err != nil {
				return "", fmt.Errorf("checkpoint step %d: %w", step, err)
			}
			info, err := checkpoint.WriteShard(dir, s, S, sh)
			if err != nil {
				return "", fmt.Errorf("checkpoint step %d: %w", step, err)
			}
			b, _ := json.Marshal(info)
			if err := ck.job.Store.Set(ctx, key(s), b); err != nil {
				return "", fmt.Errorf("checkpoint step %d: publish stage %d: %w", step, s, err)
			}
		}
	}
	if ck.job.Rank != 0 {
		return dir, nil
	}
	// Every save of an earlier step is over (the ranks met in this step's
	// all-reduce after it): what is left of one was killed.
	if _, err := checkpoint.CleanTemps(ck.cfg.CheckpointDir, dir); err != nil {
		return "", fmt.Errorf("checkpoint step %d: cleaning up after killed saves: %w", step, err)
	}
	m := ck.manifest(step)
	for s := range S {
		wctx, cancel := ck.waitCtx(ctx)
		b, err := ck.job.Store.Get(wctx, key(s))
		cancel()
		if err != nil {
			return "", fmt.Errorf("checkpoint step %d: waiting for stage %d's shard (rank %d): %w", step, s, ck.sched.Placement[s], err)
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
func (ck *checkpointer) restore(ctx context.Context, rs *rankStages) (int, error) {
	c := ck.cfg
	if c.CheckpointDir == "" {
		return 0, nil
	}
	if err := checkResumeRoot(c, ck.job.Restart); err != nil {
		return 0, err
	}
	if ck.dRank == 0 {
		// This rank writes shards: find a root it cannot write now, not at the
		// first save.
		if err := checkpoint.CheckWritable(c.CheckpointDir); err != nil {
			return 0, fmt.Errorf("--checkpoint-dir %s cannot hold checkpoints: %w", c.CheckpointDir, err)
		}
	}
	p, err := ck.resumePoint(ctx)
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
	for _, st := range ck.order {
		var specs []checkpoint.TensorSpec
		for _, p := range rs.stages[st].Params() {
			specs = append(specs, checkpoint.TensorSpec{Name: p.Name, Shape: p.Shape})
		}
		_, sh, err := checkpoint.Gather(dir, checkpoint.Expect{Model: c.Model.JSON(), Optimizer: c.Optimizer, Params: specs})
		if err != nil {
			return 0, fmt.Errorf("resume stage %d from %s: %w", st, dir, err)
		}
		if err := rs.stages[st].LoadShard(sh, rs.opts[st], m.Step); err != nil {
			return 0, fmt.Errorf("checkpoint %s: %w", dir, err)
		}
	}
	ck.logf("resumed from %s (step %d)", dir, m.Step)
	return m.Data.Step, nil
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
	if err := checkResumeRoot(c, 0); err != nil {
		return err
	}
	if err := checkpoint.CheckWritable(c.CheckpointDir); err != nil {
		return fmt.Errorf("--checkpoint-dir %s cannot hold checkpoints: %w", c.CheckpointDir, err)
	}
	steps, err := checkpoint.Complete(c.CheckpointDir)
	if err != nil {
		return fmt.Errorf("--checkpoint-dir %s: %w", c.CheckpointDir, err)
	}
	// Past, not at: a newest checkpoint at --steps that turns out damaged
	// leaves an older one to train on from.
	if c.Resume && len(steps) > 0 && steps[len(steps)-1] > c.Steps {
		return fmt.Errorf("--resume: the newest checkpoint under %s is at step %d, already past --steps %d: give --steps above %d to train on",
			c.CheckpointDir, steps[len(steps)-1], c.Steps, steps[len(steps)-1])
	}
	_, err = planResume(c.CheckpointDir, c.Resume, c.Overwrite, steps)
	return err
}

// checkResumeRoot refuses --resume (asked for, not a restart's) into a
// --checkpoint-dir that does not exist: a mistyped path would otherwise
// start a new run from step 0. An empty directory starts from step 0.
func checkResumeRoot(c TrainConfig, restart int) error {
	if !c.Resume || restart > 0 {
		return nil
	}
	if _, err := os.Stat(c.CheckpointDir); errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("--resume: --checkpoint-dir %s does not exist: give the directory of the run to continue (or make it, e.g. mkdir -p, to start a new run there)", c.CheckpointDir)
	}
	return nil
}

// resumePoint is rank 0's choice of checkpoint, which it makes (cleaning up
// after killed saves and, with --overwrite, clearing the old run first) and
// publishes; every other rank waits for it. No rank writes to the root
// before every rank has it.
func (ck *checkpointer) resumePoint(ctx context.Context) (resumeChoice, error) {
	wctx, cancel := ck.waitCtx(ctx)
	defer cancel()
	if ck.job.Rank != 0 {
		b, err := ck.job.Store.Get(wctx, resumeKey)
		if err != nil {
			return resumeChoice{}, &collective.PeerError{Peer: 0, Err: fmt.Errorf("resume: waiting for rank 0's choice of checkpoint: %w", err)}
		}
		var p resumeChoice
		if err := json.Unmarshal(b, &p); err != nil {
			return resumeChoice{}, fmt.Errorf("resume: rank 0's choice %q: %w", b, err)
		}
		return p, nil
	}
	p, err := ck.chooseResume()
	if err != nil {
		return p, err
	}
	b, _ := json.Marshal(p)
	if err := ck.job.Store.Set(wctx, resumeKey, b); err != nil {
		return p, fmt.Errorf("resume: publish the choice of checkpoint: %w", err)
	}
	return p, nil
}

// chooseResume is rank 0's side of resumePoint.
func (ck *checkpointer) chooseResume() (resumeChoice, error) {
	c := ck.cfg
	root := c.CheckpointDir
	if removed, err := checkpoint.CleanTemps(root, ""); err != nil {
		return resumeChoice{}, fmt.Errorf("--checkpoint-dir %s: cleaning up after killed saves: %w", root, err)
	} else if len(removed) > 0 {
		ck.logf("removed %d temporary files of killed checkpoint saves under %s", len(removed), root)
	}
	steps, err := checkpoint.Complete(root)
	if err != nil {
		return resumeChoice{}, fmt.Errorf("--checkpoint-dir %s: %w", root, err)
	}
	plan, err := planResume(root, c.Resume || ck.job.Restart > 0, c.Overwrite, steps)
	if err != nil {
		return resumeChoice{}, err
	}
	if plan.Clear && len(steps) > 0 {
		if err := checkpoint.Clear(root); err != nil {
			return resumeChoice{}, fmt.Errorf("--overwrite: %w", err)
		}
		ck.logf("--overwrite: removed the %d checkpoints under %s", len(steps), root)
	}
	if plan.Step == 0 {
		if c.Resume || ck.job.Restart > 0 {
			ck.logf("no complete checkpoint under %s: starting from step 0", root)
		}
		return resumeChoice{}, nil
	}
	dir := checkpoint.StepDir(root, plan.Step)
	b, err := os.ReadFile(filepath.Join(dir, checkpoint.ManifestName))
	if err == nil {
		err = checkChosen(dir, plan.Step)
	}
	if err != nil {
		return resumeChoice{}, damaged(root, steps, plan.Step, err)
	}
	sum := sha256.Sum256(b)
	return resumeChoice{Step: plan.Step, Manifest: hex.EncodeToString(sum[:])}, nil
}

// checkChosen parses and checks the manifest in dir, the checkpoint of step
// rank 0 chose, before it publishes the choice: every rank would otherwise
// find the same damage at once, and whichever reported it first would be
// named the root cause.
func checkChosen(dir string, step int) error {
	m, err := checkpoint.ReadManifest(dir)
	if err != nil {
		return err
	}
	if m.Step != step {
		return fmt.Errorf("its manifest says step %d", m.Step)
	}
	return nil
}

// damaged is rank 0's error for a chosen checkpoint it found damaged: which
// one, why, and how to go on. It does not fall back to an older checkpoint by
// itself: that would train over the lost steps again without anyone having
// decided to, and leave the damage in place for the next --resume.
func damaged(root string, steps []int, step int, err error) error {
	dir := checkpoint.StepDir(root, step)
	next := "start from step 0"
	for i := len(steps) - 1; i >= 0; i-- {
		if steps[i] < step {
			next = "resume from " + filepath.Base(checkpoint.StepDir(root, steps[i])) + ", the one before it"
			break
		}
	}
	return fmt.Errorf("resume: the newest complete checkpoint %s is damaged: %w; move it out of %s (or delete it) to %s", dir, err, root, next)
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
