package ranks

import (
	"errors"
	"path/filepath"
	"testing"
	"time"
)

// tickClock is a fake clock that moves one second at every reading.
type tickClock struct{ t time.Time }

func (c *tickClock) now() time.Time {
	c.t = c.t.Add(time.Second)
	return c.t
}

// TestEvalAndSaveOwnRecords: with --eval-every 0 the run still evaluates
// and checkpoints after its last step, and each gets a record of its own,
// after the step's, timed by its own two clock readings; every step's time
// is its two readings alone (with the clock moving a second per reading,
// exactly 1 s), so the evaluation and the save are not in it. Steps count
// from 1, and the step's record keeps the validation loss.
func TestEvalAndSaveOwnRecords(t *testing.T) {
	cfg := tiny(t)
	cfg.Steps, cfg.EvalEvery, cfg.EvalBatches = 3, 0, 3
	cfg.CheckpointDir = t.TempDir()
	var got []any
	_, errs := trainInProcess(t, cfg, func(rank int, _ <-chan struct{}, job *Job) {
		clock := &tickClock{}
		job.Clock = clock.now
		job.Report = func(r StepRecord) { got = append(got, r) }
		job.Event = func(e EventRecord) { got = append(got, e) }
	})
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	if len(got) != 5 {
		t.Fatalf("%d records, want 3 steps, an evaluation and a checkpoint: %+v", len(got), got)
	}
	for i := range 3 {
		r, ok := got[i].(StepRecord)
		if !ok || r.Record != RecordStep || r.Step != i+1 || r.StepS != 1 {
			t.Errorf("record %d: %+v, want step %d's, timed 1 s", i, got[i], i+1)
		}
	}
	last := got[2].(StepRecord)
	ev, ok := got[3].(EventRecord)
	if !ok || ev.Record != RecordEval || ev.Step != 3 || ev.Seconds != 1 || ev.Batches != 3 || ev.ValLoss == nil || last.ValLoss == nil || *ev.ValLoss != *last.ValLoss {
		t.Errorf("evaluation record %+v (step's validation loss %v)", got[3], last.ValLoss)
	}
	ck, ok := got[4].(EventRecord)
	if !ok || ck.Record != RecordCheckpoint || ck.Step != 3 || ck.Seconds != 1 || ck.Dir != filepath.Join(cfg.CheckpointDir, "step-000003") {
		t.Errorf("checkpoint record %+v", got[4])
	}
}
