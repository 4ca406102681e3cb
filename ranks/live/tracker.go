package live

import (
	"context"
	"encoding/json"
	"strconv"
	"sync"
	"time"

	"github.com/pplaunch/pplaunch/schedules"
	"github.com/pplaunch/pplaunch/store"
)

// PublishEvery is how often a rank publishes its action to the store: a
// small request a second per rank, nothing beside a step, and fresh enough
// for a person watching.
const PublishEvery = time.Second

// Report is what a rank publishes: the step it is in (from 1, as on the
// console) and what it does there (an action of the schedule in words, with
// the peer of a transfer, or a phase outside the stage loop), since when, and
// when it published: a report whose At stops moving comes from a rank that is
// stopped or hung.
type Report struct {
	Step  int       `json:"step"`
	Doing string    `json:"doing"`
	Peer  int       `json:"peer"` // the rank on the other end of a transfer, -1 for none
	Since time.Time `json:"since"`
	At    time.Time `json:"at"`
}

// Tracker holds the action its rank is in.
type Tracker struct {
	sched         *schedules.Schedule
	replicaOrigin int // the world rank of this replica's pipeline rank 0
	mu            sync.Mutex
	report        Report
}

// NewTracker tracks world rank rank of a job running sched on each of its
// pipelines of sched.P ranks (world rank r is pipeline rank r mod P of
// replica r / P).
func NewTracker(sched *schedules.Schedule, rank int) *Tracker {
	return &Tracker{sched: sched, replicaOrigin: rank / sched.P * sched.P,
		report: Report{Doing: "starting", Peer: -1, Since: time.Now()}}
}

// Before returns a hook for ranks.Job.Stall: it notes each action, then runs next.
func (t *Tracker) Before(next func(int, schedules.Action)) func(int, schedules.Action) {
	return func(step int, a schedules.Action) {
		peer := t.sched.Peer(a)
		if peer >= 0 {
			peer += t.replicaOrigin
		}
		t.set(Report{Step: step + 1, Doing: Describe(a, peer), Peer: peer, Since: time.Now()})
		if next != nil {
			next(step, a)
		}
	}
}

// SetPhase notes a phase outside the stage loop ("evaluating", "done").
func (t *Tracker) SetPhase(step int, phase string) {
	t.set(Report{Step: step, Doing: phase, Peer: -1, Since: time.Now()})
}

func (t *Tracker) set(r Report) {
	t.mu.Lock()
	t.report = r
	t.mu.Unlock()
}

// Describe says what action a is, with its peer (-1: none), in the words the
// page shows: "RECV_F mb 3 from rank 1", "F mb 2 of stage 5".
func Describe(a schedules.Action, peer int) string {
	s := a.Kind.String() + " mb " + strconv.Itoa(a.Micro)
	switch {
	case a.Kind == schedules.SendF || a.Kind == schedules.SendB:
		s += " to rank " + strconv.Itoa(peer)
	case a.Kind.IsTransfer():
		s += " from rank " + strconv.Itoa(peer)
	default:
		s += " of stage " + strconv.Itoa(a.Stage)
	}
	return s
}

// Current is the rank's report as of now.
func (t *Tracker) Current() Report {
	t.mu.Lock()
	defer t.mu.Unlock()
	r := t.report
	r.At = time.Now()
	return r
}

func reportKey(rank int) string { return "live/rank/" + strconv.Itoa(rank) }

// Publish sets the rank's report in the store every PublishEvery until ctx
// ends. A failed set is dropped: the view goes stale, the job goes on.
func (t *Tracker) Publish(ctx context.Context, st store.Store, rank int) {
	tick := time.NewTicker(PublishEvery)
	defer tick.Stop()
	for {
		b, _ := json.Marshal(t.Current())
		sctx, cancel := context.WithTimeout(ctx, PublishEvery)
		_ = st.Set(sctx, reportKey(rank), b)
		cancel()
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// Gather reads every rank's latest report from the store, waiting at most
// wait for each: a rank that has not published yet is missing from the map.
func Gather(ctx context.Context, st store.Store, world int, wait time.Duration) map[int]Report {
	out := make(map[int]Report, world)
	var mu sync.Mutex
	var wg sync.WaitGroup
	for r := range world {
		wg.Add(1)
		go func() {
			defer wg.Done()
			gctx, cancel := context.WithTimeout(ctx, wait)
			defer cancel()
			b, err := st.Get(gctx, reportKey(r))
			var rep Report
			if err != nil || json.Unmarshal(b, &rep) != nil {
				return
			}
			mu.Lock()
			out[r] = rep
			mu.Unlock()
		}()
	}
	wg.Wait()
	return out
}
