package report

import (
	"context"
	"time"

	"github.com/pplaunch/pplaunch/ranks"
	"github.com/pplaunch/pplaunch/ranks/live"
)

// newBoard is rank 0's live view of the run: its configuration and layout.
func newBoard(cfg ranks.TrainConfig, title string, world int) *live.Board {
	run := live.Run{Title: title, Config: string(cfg.Effective), World: world, PP: cfg.PP, DP: cfg.DP, Schedule: cfg.Schedule,
		Steps: cfg.Steps, Started: time.Now()}
	l, err := cfg.Plan(world)
	if err != nil {
		return live.NewBoard(run, nil)
	}
	return live.NewBoard(run, l.Sched)
}

// Track makes every rank of a run with --metrics-addr publish the action it
// is in (for the live view's rows), and rank 0 gather those reports into the
// board of its Run r (nil on the other ranks), until ctx ends; maxRestarts
// is the job's --max-restarts.
func Track(ctx context.Context, job *ranks.Job, cfg ranks.TrainConfig, r *Run, maxRestarts int) {
	l, err := cfg.Plan(job.Size)
	if err != nil || l.Sched == nil {
		return
	}
	t := live.NewTracker(l.Sched, job.Rank)
	job.Stall = t.Before(job.Stall)
	go t.Publish(ctx, job.Store, job.Rank)
	if r == nil || r.prom == nil {
		return
	}
	b := r.prom.board
	b.SetRestart(job.Restart, maxRestarts)
	go func() {
		tick := time.NewTicker(live.PublishEvery)
		defer tick.Stop()
		for {
			b.SetReports(live.Gather(ctx, job.Store, job.Size, live.PublishEvery/2))
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
}
