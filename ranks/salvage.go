package ranks

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/pplaunch/pplaunch/models/checkpoint"
)

// salvageWait bounds the store requests of a salvage: the ranks are being
// stopped, and a store that does not answer at once is no place to wait.
const salvageWait = 2 * time.Second

// salvage writes, when a step failed (an elastic job's node was lost), the
// checkpoint of the last completed step (done steps) from the memory of the
// ranks that are left: the failed step never reached the optimizer, so every
// rank's parameters and optimizer state are still those after step done.
// For each stage, the first of its holders (its data-parallel replicas) to
// claim it in the store writes its shard, and whichever rank writes the last
// stage's commits the manifest: no rank waits for another, which may be
// blocked on a peer until this one's links close. A stage whose every holder
// is gone leaves the checkpoint uncommitted (its shards without a manifest,
// which no resume reads): the world then goes on from the newest saved one.
// Under ZeRO stage 1 a replica holds only part of its stage's optimizer
// state, so nothing is salvaged; nor is anything when the failure came
// while the optimizer was updating (some stages are then a step ahead).
func (ck *checkpointer) salvage(done int, rs *rankStages, updating bool) {
	c := ck.cfg
	if !ck.job.Salvage || c.CheckpointDir == "" || ck.zeroOn() || done == 0 || updating {
		return
	}
	if steps, err := checkpoint.Complete(c.CheckpointDir); err != nil || slices.Contains(steps, done) {
		return // saved already (or the root is unreadable: nothing to add to)
	}
	ctx, cancel := context.WithTimeout(context.Background(), salvageWait)
	defer cancel()
	dir := checkpoint.StepDir(c.CheckpointDir, done)
	S := ck.sched.Stages()
	key := func(s int) string { return fmt.Sprintf("salvage/%d/stage/%d", done, s) }
	for _, s := range ck.order {
		if _, won, err := ck.job.Store.CompareAndSet(ctx, key(s)+"/claim", nil, []byte(strconv.Itoa(ck.job.Rank))); err != nil || !won {
			continue
		}
		info, err := checkpoint.WriteShard(dir, s, S, rs.stages[s].ShardState(rs.opts[s].State()))
		if err != nil {
			ck.job.Logf("rank %d: saving step %d from memory: %v", ck.job.Rank, done, err)
			return
		}
		b, _ := json.Marshal(info)
		if err := ck.job.Store.Set(ctx, key(s), b); err != nil {
			return
		}
		if n, err := ck.job.Store.Add(ctx, fmt.Sprintf("salvage/%d/written", done), 1); err == nil && n == int64(S) {
			ck.commitSalvage(ctx, dir, done, key)
		}
	}
}

// commitSalvage commits the manifest of the salvaged checkpoint of step
// done, whose stages' entries are in the store under key(s).
func (ck *checkpointer) commitSalvage(ctx context.Context, dir string, done int, key func(int) string) {
	m := ck.manifest(done)
	for s := range ck.sched.Stages() {
		b, err := ck.job.Store.Get(ctx, key(s))
		var info checkpoint.StageInfo
		if err == nil {
			err = json.Unmarshal(b, &info)
		}
		if err != nil {
			ck.job.Logf("rank %d: saving step %d from memory: stage %d's entry: %v", ck.job.Rank, done, s, err)
			return
		}
		m.Stages = append(m.Stages, info)
	}
	if err := checkpoint.Commit(dir, m); err != nil {
		ck.job.Logf("rank %d: saving step %d from memory: %v", ck.job.Rank, done, err)
		return
	}
	ck.job.Logf("rank %d: a step failed; saved step %d from the memory of the ranks left: %s", ck.job.Rank, done, dir)
}
