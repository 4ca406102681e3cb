package bench

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/pplaunch/pplaunch/collective"
	"github.com/pplaunch/pplaunch/models"
	"github.com/pplaunch/pplaunch/models/tensor"
	"github.com/pplaunch/pplaunch/ranks/stageloop"
	"github.com/pplaunch/pplaunch/schedules"
	"github.com/pplaunch/pplaunch/store"
)

// OverheadOptions describe one runtime-overhead measurement: the real
// executor and TCP transport drive stages whose every action takes a fixed
// time, so the ideal step time is known from the simulator.
type OverheadOptions struct {
	Schedule string
	P, M, V  int                 // V: virtual stages per rank (interleaved; 2 when left 0)
	Cost     schedules.StageCost // nominal time of each action of one stage (split over v virtual stages)
	ActElems int                 // float32 values in one activation message
	Steps    int                 // timed steps (one more runs first, untimed)
}

// OverheadReport is the result: measured step time against the simulator's
// makespan for the calibrated action times (what each fixed-cost action really
// took, mean over the run), and the ratio.
type OverheadReport struct {
	OverheadOptions
	Calibrated schedules.StageCost
	Measured   time.Duration // median step time, first action start to last action end
	Ideal      time.Duration // simulator makespan for Calibrated costs, free transfers
	Ratio      float64
}

// fixedStage is a stageloop.Stage whose actions wait a fixed time (a sleep, so
// that P ranks fit on fewer cores) and record how long they really took.
type fixedStage struct {
	first, last bool
	cost        schedules.StageCost
	act         *tensor.Tensor
	mu          *sync.Mutex
	took        map[schedules.Kind][]time.Duration
}

func (f *fixedStage) wait(k schedules.Kind, d float64) {
	t0 := time.Now()
	time.Sleep(time.Duration(d * float64(time.Second)))
	f.mu.Lock()
	f.took[k] = append(f.took[k], time.Since(t0))
	f.mu.Unlock()
}

func (f *fixedStage) IsFirst() bool              { return f.first }
func (f *fixedStage) IsLast() bool               { return f.last }
func (f *fixedStage) ActShape(int) []int         { return slices.Clone(f.act.Shape) }
func (f *fixedStage) BeginStep(int, int) error   { return nil }
func (f *fixedStage) FinishStep() error          { return nil }
func (f *fixedStage) ActivationBytes() int64     { return 0 }
func (f *fixedStage) PeakActivationBytes() int64 { return 0 }
func (f *fixedStage) ResetPeak()                 {}
func (f *fixedStage) BackwardWeight(int) error   { f.wait(schedules.W, f.cost.W); return nil }

// tensorIf is a message tensor of the stage's shape, or nil where there is
// no peer to send to. It is a new one each time, as a stageloop.Stage's outputs
// belong to the executor (which reuses sent ones as receive buffers).
func (f *fixedStage) tensorIf(peer bool) *tensor.Tensor {
	if peer {
		return tensor.New(f.act.Shape...)
	}
	return nil
}

func (f *fixedStage) Forward(int, models.Input) (models.Output, error) {
	f.wait(schedules.F, f.cost.F)
	return models.Output{Act: f.tensorIf(!f.last)}, nil
}

func (f *fixedStage) Backward(_ int, _ *tensor.Tensor) (*tensor.Tensor, error) {
	f.wait(schedules.B, f.cost.B)
	return f.tensorIf(!f.first), nil
}

func (f *fixedStage) BackwardInput(_ int, _ *tensor.Tensor) (*tensor.Tensor, error) {
	f.wait(schedules.I, f.cost.I)
	return f.tensorIf(!f.first), nil
}

// Overhead runs o.Steps+1 steps of the schedule on P goroutine ranks joined
// by the TCP backend over loopback and reports the median step time against
// the simulator's.
func Overhead(o OverheadOptions) (OverheadReport, error) {
	if v, err := schedules.Resolve(o.Schedule, o.P, o.M, o.V); err == nil {
		o.V = v // the schedule's own count where 0 was given (Generate reports a bad one)
	}
	rep := OverheadReport{OverheadOptions: o}
	if o.Steps < 1 || o.ActElems < 0 || o.Cost.F < 0 || o.Cost.B < 0 || o.Cost.I < 0 || o.Cost.W < 0 {
		return rep, fmt.Errorf("bench overhead: steps %d, activation elements %d, costs %+v: want at least one step and nothing negative",
			o.Steps, o.ActElems, o.Cost)
	}
	sched, err := schedules.Generate(o.Schedule, o.P, o.M, o.V)
	if err != nil {
		return rep, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	st := store.NewMemory()
	defer st.Close()
	comms, err := dialLoopbackRanks(ctx, st, o.P)
	defer closeComms(comms)
	if err != nil {
		return rep, err
	}
	// A rank's v virtual stages together cost what one stage of a v=1
	// schedule costs, so that schedules are compared on the same model.
	v := float64(sched.V)
	cost := schedules.StageCost{F: o.Cost.F / v, B: o.Cost.B / v, I: o.Cost.I / v, W: o.Cost.W / v}
	var mu sync.Mutex
	took := map[schedules.Kind][]time.Duration{}
	execs := fixedExecutors(sched, comms, cost, o.ActElems, &mu, took)
	times, err := runSteps(ctx, execs, o.Steps+1)
	if err != nil {
		return rep, err
	}
	slices.Sort(times)
	rep.Measured = times[len(times)/2]
	rep.Calibrated = calibrated(took, cost)
	tl, err := schedules.Simulate(sched, schedules.Costs{Default: rep.Calibrated})
	if err != nil {
		return rep, err
	}
	stats, err := schedules.Analyze(sched, tl, nil)
	if err != nil {
		return rep, err
	}
	rep.Ideal = secs(stats.Makespan)
	rep.Ratio = rep.Measured.Seconds() / stats.Makespan
	return rep, nil
}

// dialLoopbackRanks joins P TCP ranks through st. The comms it returns (some
// nil on an error) are the caller's to close.
func dialLoopbackRanks(ctx context.Context, st store.Store, P int) ([]collective.Comm, error) {
	comms := make([]collective.Comm, P)
	errs := make([]error, P)
	var wg sync.WaitGroup
	for r := range P {
		wg.Go(func() {
			comms[r], errs[r] = collective.NewTCP(ctx, st, r, P, collective.TCPOptions{Token: "bench"})
		})
	}
	wg.Wait()
	for r, err := range errs {
		if err != nil {
			return comms, fmt.Errorf("rank %d: %w", r, err)
		}
	}
	return comms, nil
}

func closeComms(comms []collective.Comm) {
	for _, c := range comms {
		if c != nil {
			c.Close()
		}
	}
}

// fixedExecutors gives each rank an executor over fixedStages that record
// into took.
func fixedExecutors(sched *schedules.Schedule, comms []collective.Comm, cost schedules.StageCost, actElems int,
	mu *sync.Mutex, took map[schedules.Kind][]time.Duration) []*stageloop.Executor {
	execs := make([]*stageloop.Executor, len(comms))
	S := sched.Stages()
	for r := range comms {
		stages := map[int]stageloop.Stage{}
		for _, s := range sched.StagesOf(r) {
			stages[s] = &fixedStage{first: s == 0, last: s == S-1, cost: cost, act: tensor.New(1, 1, max(actElems, 1)), mu: mu, took: took}
		}
		execs[r] = &stageloop.Executor{Sched: sched, PRank: r, Stages: stages, Comm: comms[r], Peer: func(p int) int { return p },
			MicroSize: 1, Timeout: time.Minute}
	}
	return execs
}

// runSteps runs steps steps on all executors at once and returns the time of
// each but the first (a warm-up).
func runSteps(ctx context.Context, execs []*stageloop.Executor, steps int) ([]time.Duration, error) {
	none := func(int) ([]int32, []int32, error) { return nil, nil, nil }
	errs := make([]error, len(execs))
	var wg sync.WaitGroup
	var times []time.Duration
	for step := range steps {
		res := make([]*stageloop.StepResult, len(execs))
		for r := range execs {
			wg.Go(func() { res[r], errs[r] = execs[r].Step(ctx, step, none) })
		}
		wg.Wait()
		for r := range res {
			if errs[r] != nil {
				return nil, fmt.Errorf("rank %d: %w", r, errs[r])
			}
		}
		if step > 0 {
			times = append(times, computeSpan(res))
		}
	}
	return times, nil
}

// computeSpan is one step's time over all ranks: from the first compute
// action's start to the last one's end.
func computeSpan(res []*stageloop.StepResult) time.Duration {
	var first, last time.Time
	for _, sr := range res {
		for _, sp := range sr.Spans {
			if !sp.Action.Kind.IsCompute() {
				continue
			}
			a, b := sr.Start.Add(secs(sp.Start)), sr.Start.Add(secs(sp.End))
			if first.IsZero() || a.Before(first) {
				first = a
			}
			if b.After(last) {
				last = b
			}
		}
	}
	return last.Sub(first)
}

// calibrated is the mean time each kind of action really took; kinds the
// schedule did not run are filled from the others (B is I then W) or from
// the nominal cost.
func calibrated(took map[schedules.Kind][]time.Duration, cost schedules.StageCost) schedules.StageCost {
	mean := func(k schedules.Kind) float64 {
		var sum time.Duration
		for _, d := range took[k] {
			sum += d
		}
		if len(took[k]) == 0 {
			return 0
		}
		return (sum / time.Duration(len(took[k]))).Seconds()
	}
	c := schedules.StageCost{F: mean(schedules.F), B: mean(schedules.B), I: mean(schedules.I), W: mean(schedules.W)}
	if c.B == 0 { // split backward only: B is I then W
		c.B = c.I + c.W
	}
	if c.I == 0 {
		c.I, c.W = cost.I, cost.W
	}
	return c
}

func secs(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }
