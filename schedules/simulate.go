package schedules

import (
	"fmt"
	"math"
	"sort"
)

// StageCost is the time, in seconds, of each compute kind on one stage for
// one micro-batch.
type StageCost struct {
	F, B, I, W float64
}

// Costs are the simulator's inputs.
type Costs struct {
	Default StageCost         // cost of every stage without an override
	Stages  map[int]StageCost // per-stage overrides (all four fields are taken)
	Comm    float64           // seconds from a SEND's start to the data being usable at the peer
}

// of returns the cost of compute action a.
func (c Costs) of(a Action) float64 {
	sc, ok := c.Stages[a.Stage]
	if !ok {
		sc = c.Default
	}
	switch a.Kind {
	case F:
		return sc.F
	case B:
		return sc.B
	case I:
		return sc.I
	case W:
		return sc.W
	}
	return 0
}

func (c Costs) check() error {
	bad := func(x float64) bool { return x < 0 || math.IsNaN(x) || math.IsInf(x, 0) }
	all := map[int]StageCost{-1: c.Default}
	for s, sc := range c.Stages {
		all[s] = sc
	}
	for s, sc := range all {
		if bad(sc.F) || bad(sc.B) || bad(sc.I) || bad(sc.W) {
			where := "default"
			if s >= 0 {
				where = fmt.Sprintf("stage %d", s)
			}
			return fmt.Errorf("costs: %s has a negative or non-finite time: %+v", where, sc)
		}
	}
	if bad(c.Comm) {
		return fmt.Errorf("costs: transfer time %v is negative or non-finite", c.Comm)
	}
	return nil
}

// Span is one action's interval on a rank, in seconds from the start of the
// step.
type Span struct {
	Action     Action
	Start, End float64
}

// Timeline is what happened (or would happen) in one step: per rank, one span
// per action. The simulator fills it from costs; an executor fills it from
// measured timestamps. Spans of a rank are in list order; compute spans of a
// rank do not overlap, transfer spans may overlap compute.
type Timeline struct {
	Ranks [][]Span
}

// Simulate validates s and runs it with costs c. Each rank runs its compute
// actions in list order, one at a time; an action starts when the rank's
// previous compute has ended and its inputs are there. A transfer does not
// occupy the rank (the executor posts receives early and sends without
// blocking compute): the data leaves when its producer ends and is usable by
// the consumer Comm seconds later. The SEND and RECV spans both cover that
// interval.
func Simulate(s *Schedule, c Costs) (*Timeline, error) {
	if err := c.check(); err != nil {
		return nil, err
	}
	ck, err := validate(s)
	if err != nil {
		return nil, err
	}
	for st := range c.Stages {
		if st < 0 || st >= len(s.Placement) {
			return nil, fmt.Errorf("costs: an override for stage %d, but the schedule has stages 0..%d", st, len(s.Placement)-1)
		}
	}
	sm := newSimulation(s, c, ck)
	tl := &Timeline{Ranks: make([][]Span, s.P)}
	pc := make([]int, s.P)
	for progress := true; progress; {
		progress = false
		for r := range s.P {
			for pc[r] < len(s.Ranks[r]) {
				span, ok := sm.run(r, s.Ranks[r][pc[r]])
				if !ok {
					break
				}
				tl.Ranks[r] = append(tl.Ranks[r], span)
				pc[r]++
				progress = true
			}
		}
	}
	for r := range s.P {
		if pc[r] < len(s.Ranks[r]) {
			// Validate's dry run is stricter than this model, so this
			// cannot happen for a validated schedule.
			return nil, fmt.Errorf("simulate: rank %d stuck at step %d (%v) in a validated schedule", r, pc[r], s.Ranks[r][pc[r]])
		}
	}
	return tl, nil
}

// simulation is the state of Simulate between actions.
type simulation struct {
	s    *Schedule
	c    Costs
	ck   *checker
	last int // the last stage
	// ends[id] is when a compute action ended, NaN until it has run; the
	// index is dense because the schedule is complete.
	ends []float64
	free []float64 // per rank, when its previous compute ended
}

func newSimulation(s *Schedule, c Costs, ck *checker) *simulation {
	ends := make([]float64, len(ck.dense))
	for i := range ends {
		ends[i] = math.NaN()
	}
	return &simulation{s: s, c: c, ck: ck, last: len(s.Placement) - 1, ends: ends, free: make([]float64, s.P)}
}

func (sm *simulation) endOf(a Action) (float64, bool) {
	e := sm.ends[sm.ck.id(a)]
	return e, !math.IsNaN(e)
}

// gradEnd is when the input gradient of (stage, micro) is ready, from B or I.
func (sm *simulation) gradEnd(st, m int) (float64, bool) {
	if e, ok := sm.endOf(Action{B, st, m}); ok {
		return e, true
	}
	return sm.endOf(Action{I, st, m})
}

// arrive is when the output of producer stage ps, ended at e, is usable on rank r.
func (sm *simulation) arrive(e float64, ps, r int) float64 {
	if sm.s.Placement[ps] != r {
		return e + sm.c.Comm
	}
	return e
}

// run runs action a on rank r and returns its span; false when a is a
// receive whose data has not been produced yet.
func (sm *simulation) run(r int, a Action) (Span, bool) {
	st, m := a.Stage, a.Micro
	switch a.Kind {
	case F, B, I, W:
		ready := sm.free[r]
		if a.Kind == F && st > 0 {
			e, _ := sm.endOf(Action{F, st - 1, m})
			ready = max(ready, sm.arrive(e, st-1, r))
		}
		if (a.Kind == B || a.Kind == I) && st < sm.last {
			e, _ := sm.gradEnd(st+1, m)
			ready = max(ready, sm.arrive(e, st+1, r))
		}
		span := Span{a, ready, ready + sm.c.of(a)}
		sm.free[r] = span.End
		sm.ends[sm.ck.id(a)] = span.End
		return span, true
	case SendF:
		e, _ := sm.endOf(Action{F, st, m})
		return Span{a, e, e + sm.c.Comm}, true
	case SendB:
		e, _ := sm.gradEnd(st, m)
		return Span{a, e, e + sm.c.Comm}, true
	case RecvF:
		e, ok := sm.endOf(Action{F, st - 1, m})
		return Span{a, e, e + sm.c.Comm}, ok
	case RecvB:
		e, ok := sm.gradEnd(st+1, m)
		return Span{a, e, e + sm.c.Comm}, ok
	}
	return Span{}, true
}

// Stats summarises a timeline.
type Stats struct {
	Makespan float64   // from the first compute start to the last compute end
	Busy     []float64 // per rank, total compute time
	Idle     []float64 // per rank, Makespan - Busy
	// Bubble is the fraction of rank time spent idle: sum(Idle) / (P·Makespan).
	Bubble float64
	// PeakLive is, per rank, the most micro-batches' activations held at once,
	// in micro-batch units: one unit is one micro-batch through all V stages
	// of the rank. A (stage, micro) is live from the start of its F to the end
	// of its B, or of its W when the backward is split.
	PeakLive []float64
	// PeakBytes is PeakLive in bytes, when Analyze was given bytes per stage;
	// nil otherwise.
	PeakBytes []int64
}

// Analyze computes the makespan, busy and idle time, bubble fraction and peak
// live activations of a timeline, simulated or measured. actBytes, if not
// nil, gives the activation bytes one micro-batch holds on each stage.
func Analyze(s *Schedule, tl *Timeline, actBytes []int64) (Stats, error) {
	if len(tl.Ranks) != s.P {
		return Stats{}, fmt.Errorf("analyze: timeline has %d ranks, schedule has %d", len(tl.Ranks), s.P)
	}
	if actBytes != nil && len(actBytes) != s.Stages() {
		return Stats{}, fmt.Errorf("analyze: %d activation sizes for %d stages", len(actBytes), s.Stages())
	}
	st := Stats{Busy: make([]float64, s.P), Idle: make([]float64, s.P), PeakLive: make([]float64, s.P)}
	if actBytes != nil {
		st.PeakBytes = make([]int64, s.P)
	}
	first, last, seen := 0.0, 0.0, false
	for r, spans := range tl.Ranks {
		var comp []Span
		for _, sp := range spans {
			if !sp.Action.Kind.IsCompute() {
				continue
			}
			if sp.Action.Stage < 0 || sp.Action.Stage >= s.Stages() {
				return Stats{}, fmt.Errorf("analyze: rank %d has %v, outside the schedule's %d stages", r, sp.Action, s.Stages())
			}
			comp = append(comp, sp)
			st.Busy[r] += sp.End - sp.Start
			if !seen || sp.Start < first {
				first = sp.Start
			}
			if !seen || sp.End > last {
				last = sp.End
			}
			seen = true
		}
		sort.SliceStable(comp, func(i, j int) bool { return comp[i].Start < comp[j].Start })
		live, peak := 0, 0
		var bytes, peakBytes int64
		for _, sp := range comp {
			a := sp.Action
			var d int
			switch {
			case a.Kind == F:
				d = 1
			case a.Kind == B, a.Kind == W:
				d = -1
			}
			live += d
			peak = max(peak, live)
			if actBytes != nil {
				bytes += int64(d) * actBytes[a.Stage]
				peakBytes = max(peakBytes, bytes)
			}
		}
		st.PeakLive[r] = float64(peak) / float64(s.V)
		if actBytes != nil {
			st.PeakBytes[r] = peakBytes
		}
	}
	st.Makespan = last - first
	var idle float64
	for r := range s.P {
		st.Idle[r] = st.Makespan - st.Busy[r]
		idle += st.Idle[r]
	}
	if st.Makespan > 0 {
		st.Bubble = idle / (float64(s.P) * st.Makespan)
	}
	return st, nil
}

// MeanCosts returns, per stage and compute kind, the mean duration of the
// timeline's spans (for instance a measured one), so that Simulate can
// predict the schedule's bubble from measured times. Default holds the mean
// over all stages. Comm is left 0: measured transfer spans include waiting,
// so they are no estimate of the wire time.
func MeanCosts(s *Schedule, tl *Timeline) (Costs, error) {
	type acc struct{ sum, n [4]float64 }
	per := make(map[int]*acc)
	var all acc
	for r, spans := range tl.Ranks {
		for _, sp := range spans {
			a := sp.Action
			if !a.Kind.IsCompute() {
				continue
			}
			if a.Stage < 0 || a.Stage >= s.Stages() {
				return Costs{}, fmt.Errorf("mean costs: rank %d has %v, outside the schedule's %d stages", r, a, s.Stages())
			}
			if per[a.Stage] == nil {
				per[a.Stage] = &acc{}
			}
			d := sp.End - sp.Start
			per[a.Stage].sum[a.Kind] += d
			per[a.Stage].n[a.Kind]++
			all.sum[a.Kind] += d
			all.n[a.Kind]++
		}
	}
	mean := func(x *acc) StageCost {
		var v [4]float64
		for k := range v {
			if x.n[k] > 0 {
				v[k] = x.sum[k] / x.n[k]
			}
		}
		return StageCost{F: v[F], B: v[B], I: v[I], W: v[W]}
	}
	c := Costs{Default: mean(&all), Stages: make(map[int]StageCost, len(per))}
	for st, x := range per {
		c.Stages[st] = mean(x)
	}
	return c, nil
}

// Predict simulates s with the per-stage, per-kind mean durations of a
// measured timeline (see MeanCosts) and transfer time comm, to compare a
// measured step with what the same compute times would give without
// transfer waits.
func Predict(s *Schedule, measured *Timeline, comm float64) (*Timeline, error) {
	c, err := MeanCosts(s, measured)
	if err != nil {
		return nil, err
	}
	c.Comm = comm
	return Simulate(s, c)
}
