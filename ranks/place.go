package ranks

import (
	"context"
	"time"

	"github.com/pplaunch/pplaunch/ranks/stageloop"

	"github.com/pplaunch/pplaunch/models/data"
	"github.com/pplaunch/pplaunch/schedules"
)

// rankJob is what every part of the trainer reads: the configuration, the
// job as given, where the rank sits in the layout, and the data. Train
// builds it; only a recut changes it afterwards (the cut).
type rankJob struct {
	cfg TrainConfig
	job Job
	rankPlace
	corpus *data.Corpus
}

// rankPlace is where the rank sits in the layout, as Train planned it.
type rankPlace struct {
	sched *schedules.Schedule // what every pipeline rank runs
	cut   []int               // blocks per stage
	pRank int                 // pipeline rank
	dRank int                 // data-parallel replica
	order []int               // this rank's stages, increasing
}

// world rank of pipeline rank p in replica d.
func (j *rankJob) world(p, d int) int { return d*j.cfg.PP + p }

// now is the time by Job.Clock.
func (j *rankJob) now() time.Time {
	if j.job.Clock != nil {
		return j.job.Clock()
	}
	return time.Now()
}

// waitCtx bounds one of the trainer's waits by --timeout (see stageloop.WaitContext).
func (j *rankJob) waitCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	return stageloop.WaitContext(ctx, j.cfg.Timeout)
}

// logf prints a line on rank 0's output.
func (j *rankJob) logf(format string, args ...any) {
	if j.job.Logf != nil && j.job.Rank == 0 {
		j.job.Logf(format, args...)
	}
}
