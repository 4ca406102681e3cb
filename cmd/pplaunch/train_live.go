package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
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

// trackLive makes every rank of a run with --metrics-addr publish the action
// it is in (for the live view's rows), and rank 0 gather those reports into
// out's board, until ctx ends; maxRestarts is the job's --max-restarts.
func trackLive(ctx context.Context, job *ranks.Job, cfg ranks.TrainConfig, out *trainOutput, maxRestarts int) {
	l, err := cfg.Plan(job.Size)
	if err != nil || l.Sched == nil {
		return
	}
	t := live.NewTracker(l.Sched, job.Rank)
	job.Stall = t.Before(job.Stall)
	go t.Publish(ctx, job.Store, job.Rank)
	if out == nil || out.prom == nil {
		return
	}
	b := out.prom.board
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

// liveHistory is rank 0's copy of the live view's curve in the agent's run
// directory, a JSON line a step: a restarted group's rank 0 reads it back, so
// its view (and a page opened after the restart) holds the whole run.
type liveHistory struct{ f *os.File }

// openLiveHistory seeds b with what an earlier attempt kept beside the
// progress file progress and goes on appending to it; nil without an agent
// (no run directory) or where the file cannot be written.
func openLiveHistory(progress string, b *live.Board) *liveHistory {
	if progress == "" {
		return nil
	}
	path := filepath.Join(filepath.Dir(progress), "live-series.jsonl")
	if data, err := os.ReadFile(path); err == nil {
		var pts []live.Point
		for _, line := range bytes.Split(data, []byte("\n")) {
			var p live.Point
			if json.Unmarshal(line, &p) == nil && p.Step > 0 { // a line cut by a kill is left out
				pts = append(pts, p)
			}
		}
		b.Seed(pts)
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil
	}
	return &liveHistory{f}
}

func (h *liveHistory) add(p live.Point) {
	if h != nil {
		b, _ := json.Marshal(p) // numbers and strings always marshal
		h.f.Write(append(b, '\n'))
	}
}

func (h *liveHistory) close() {
	if h != nil {
		h.f.Close()
	}
}
