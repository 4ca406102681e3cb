package live

import (
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/pplaunch/pplaunch/ranks"
	"github.com/pplaunch/pplaunch/schedules"
)

// maxPoints bounds the curves a Board keeps: past it, every other point of
// the older half is dropped, so a long run keeps its whole shape in bounded
// memory and a page that loads late still gets the curve from step 1.
const maxPoints = 4096

// Board gathers rank 0's view of the job: the run, the step records as they
// come, and the ranks' reports. Safe for concurrent use.
type Board struct {
	sched *schedules.Schedule
	mu    sync.Mutex
	run   Run
	pts   []Point
	last  *ranks.StepRecord
	tl    *Timeline
	reps  map[int]Report
	// changed is closed (and replaced) at every change, waking the
	// event streams.
	changed     chan struct{}
	maxRestarts int
}

// NewBoard starts the view of run, whose ranks run sched (for their stages
// and the expected timeline; nil leaves both out).
func NewBoard(run Run, sched *schedules.Schedule) *Board {
	return &Board{run: run, sched: sched, reps: map[int]Report{}, changed: make(chan struct{})}
}

// PointOf is a step record's point of the curves.
func PointOf(rec ranks.StepRecord) Point {
	return Point{Step: rec.Step, Loss: rec.Loss, ValLoss: rec.ValLoss, TokensPerS: rec.TokensPerS,
		StepS: rec.StepS, Bubble: rec.BubbleMeasured, SimBubble: rec.BubblePredicted}
}

// Seed starts the curves with an earlier attempt's points (a restarted
// job's rank 0 reads them back), so the view holds the whole run; the
// steps the new attempt repeats replace them as they come.
func (b *Board) Seed(pts []Point) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, p := range pts {
		b.add(p)
	}
}

// add appends p, first dropping the points of steps at or after its own (a
// resumed run repeats the steps after its checkpoint); b.mu is held.
func (b *Board) add(p Point) {
	for len(b.pts) > 0 && b.pts[len(b.pts)-1].Step >= p.Step {
		b.pts = b.pts[:len(b.pts)-1]
	}
	b.pts = append(b.pts, p)
	if len(b.pts) > maxPoints {
		b.pts = thin(b.pts)
	}
}

// Observe adds a step's record.
func (b *Board) Observe(rec ranks.StepRecord) {
	tl := timelineOf(rec, b.sched)
	b.mu.Lock()
	defer b.mu.Unlock()
	b.add(PointOf(rec))
	r := rec
	r.Timeline, r.Transfers = nil, nil
	b.last = &r
	if tl != nil {
		b.tl = tl
	}
	b.notify()
}

// notify wakes whoever waits on Changed; b.mu is held.
func (b *Board) notify() {
	close(b.changed)
	b.changed = make(chan struct{})
}

// Changed is closed at the next change.
func (b *Board) Changed() <-chan struct{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.changed
}

// thin drops every other point of the older half of pts.
func thin(pts []Point) []Point {
	half := len(pts) / 2
	out := make([]Point, 0, len(pts))
	for i := 0; i < half; i += 2 {
		out = append(out, pts[i])
	}
	return append(out, pts[half:]...)
}

// SetReports replaces the ranks' reports.
func (b *Board) SetReports(reps map[int]Report) {
	b.mu.Lock()
	b.reps = reps
	b.mu.Unlock()
}

// SetRestart says which attempt of the job this is (0: the first) of how
// many restarts the job may take.
func (b *Board) SetRestart(n, max int) {
	b.mu.Lock()
	b.run.Restart, b.maxRestarts = n, max
	b.mu.Unlock()
}

// End marks this attempt ended, with how; ok says it ended as the user
// asked (finished, or stopped by a signal): then, or with no restart left,
// the run is done.
func (b *Board) End(outcome string, ok bool) {
	b.mu.Lock()
	b.run.Ended, b.run.Outcome = true, outcome
	b.run.Done = ok || b.run.Restart >= b.maxRestarts
	b.notify()
	b.mu.Unlock()
}

// Snapshot is the state at now.
func (b *Board) Snapshot(now time.Time) State {
	b.mu.Lock()
	defer b.mu.Unlock()
	st := State{Run: b.run, Series: slices.Clone(b.pts), Timeline: b.tl, Updated: now}
	stepS := 0.0
	if n := len(b.pts); n > 0 {
		recent := make([]float64, 0, 8)
		for _, p := range b.pts[max(0, n-8):] {
			recent = append(recent, p.StepS)
		}
		slices.Sort(recent)
		stepS = recent[len(recent)/2]
	}
	for r := range b.run.World {
		rep, ok := b.reps[r]
		rs := RankState{Rank: r, Step: rep.Step, Doing: rep.Doing}
		if ok && rep.Peer >= 0 {
			p := rep.Peer
			rs.Peer = &p
		}
		rs.Status, rs.Why, rs.ForS = Classify(rep, ok, now, stepS, b.run.Ended)
		if b.sched != nil && b.sched.P > 0 {
			rs.Stages = b.sched.StagesOf(r % b.sched.P)
		}
		b.memory(&rs)
		st.Ranks = append(st.Ranks, rs)
	}
	blameSilent(st.Ranks)
	return st
}

// blameSilent names the silent ranks in the why of the stuck ones that do
// not know their peer (a rank in a reduction waits on every other): the
// silent rank is then the likely cause, and the one to look at.
func blameSilent(rows []RankState) {
	var silent []string
	for _, r := range rows {
		if r.Status == "silent" {
			silent = append(silent, strconv.Itoa(r.Rank))
		}
	}
	if len(silent) == 0 {
		return
	}
	for i := range rows {
		if rows[i].Status == "stuck" && rows[i].Peer == nil {
			rows[i].Why += ": waiting, it seems, on rank " + strings.Join(silent, ", rank ") + " (silent)"
		}
	}
}

// memory fills a rank's memory and busy share from the last step's record.
func (b *Board) memory(rs *RankState) {
	rec, r := b.last, rs.Rank
	if rec == nil {
		return
	}
	if r < len(rec.RSS) {
		rs.RSS = rec.RSS[r]
	}
	if r < len(rec.PeakDevice) {
		rs.PeakDevice = rec.PeakDevice[r]
	}
	if r < len(rec.PeakActivation) {
		rs.PeakAct = rec.PeakActivation[r]
	}
	if r < len(rec.OptimizerBytes) {
		rs.Optimizer = rec.OptimizerBytes[r]
	}
	if r < len(rec.ComputeS) && rec.StepS > 0 {
		rs.Busy = min(1, rec.ComputeS[r]/rec.StepS)
	}
}

// timelineOf is the record's measured timeline from its first start, with
// the expected one beside it where sched pairs with it; nil without one.
func timelineOf(rec ranks.StepRecord, sched *schedules.Schedule) *Timeline {
	m := rec.Timeline
	if m == nil || len(m.Ranks) == 0 {
		return nil
	}
	t0, t1 := firstLast(m)
	out := &Timeline{Step: rec.Step, Measured: spans(m, t0), Span: t1 - t0}
	if sched != nil {
		// The schedule is one pipeline's: expect replica 0's ranks.
		pipe := &schedules.Timeline{Ranks: m.Ranks[:min(len(m.Ranks), sched.P)]}
		if exp, err := schedules.Expected(sched, pipe); err == nil {
			out.Expected = spans(exp, t0)
			_, e1 := firstLast(exp)
			out.Span = max(out.Span, e1-t0)
		}
	}
	return out
}

func firstLast(tl *schedules.Timeline) (t0, t1 float64) {
	first := true
	for _, r := range tl.Ranks {
		for _, sp := range r {
			if first || sp.Start < t0 {
				t0 = sp.Start
			}
			if first || sp.End > t1 {
				t1 = sp.End
			}
			first = false
		}
	}
	return t0, t1
}

// spans are tl's compute spans from t0 (transfers overlap them; the page
// draws what occupies a rank).
func spans(tl *schedules.Timeline, t0 float64) [][]Span {
	out := make([][]Span, len(tl.Ranks))
	for r, list := range tl.Ranks {
		out[r] = []Span{}
		for _, sp := range list {
			if !sp.Action.Kind.IsCompute() {
				continue
			}
			out[r] = append(out[r], Span{Kind: sp.Action.Kind.String(), Stage: sp.Action.Stage, Micro: sp.Action.Micro,
				Start: sp.Start - t0, End: sp.End - t0})
		}
	}
	return out
}
