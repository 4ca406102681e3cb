package ranks

import (
	"context"
	"fmt"
	"time"

	"github.com/pplaunch/pplaunch/collective"
	"github.com/pplaunch/pplaunch/models"
)

// recutMeter keeps one rank's measurements for --rebalance over the window
// since the last check: per unit and pass the time of each micro-batch
// (through the stages' Timing hooks: a block's pass is its two sublayers'
// calls, the embedding's and the head's one call; with recomputation the
// input-gradient pass has the recomputed forward's calls too), and the
// rank's step
// times. The costs are medians over every micro-batch of the window, so a
// pass that a busy machine descheduled does not move blocks. The first step
// after the start or a move is a warm-up (fresh buffers, first uploads) and
// is left out, unless it is the only step of the window. Only the step's own
// passes count, not the evaluation's or the sample's forwards between steps.
// A nil meter measures nothing.
type recutMeter struct {
	layers    int
	recompute bool
	open      bool                  // a step is being measured
	part      map[[2]int]*partPass  // (unit, pass) -> the micro-batch's pass in progress
	step      map[int]*[3][]float64 // unit -> this step's micro-batch times per pass
	window    map[int]*[3][]float64 // unit -> the counted steps' micro-batch times per pass
	stepS     []float64             // the counted steps' times
	since     int                   // steps of the window so far, counted or not
	warmup    bool                  // the window's first step is left out
}

// partPass is a unit's pass of one micro-batch, summed over its calls.
type partPass struct {
	calls int
	d     time.Duration
}

func newRecutMeter(layers int, recompute bool) *recutMeter {
	m := &recutMeter{layers: layers, recompute: recompute, part: map[[2]int]*partPass{}}
	m.reset(true)
	return m
}

// reset starts a window; warmup leaves its first step out.
func (m *recutMeter) reset(warmup bool) {
	m.step, m.window, m.stepS, m.since, m.warmup = map[int]*[3][]float64{}, map[int]*[3][]float64{}, nil, 0, warmup
}

// begin starts measuring a step.
func (m *recutMeter) begin() {
	if m != nil {
		clear(m.step)
		clear(m.part)
		m.open = true
	}
}

// hook is the stages' Timing hook.
func (m *recutMeter) hook(unit int, pass models.Pass, d time.Duration, _ int64) {
	if !m.open {
		return
	}
	k := [2]int{unit, int(pass)}
	p := m.part[k]
	if p == nil {
		p = &partPass{}
		m.part[k] = p
	}
	p.calls++
	p.d += d
	if p.calls < m.calls(unit, pass) {
		return
	}
	t := m.step[unit]
	if t == nil {
		t = &[3][]float64{}
		m.step[unit] = t
	}
	t[pass] = append(t[pass], p.d.Seconds())
	*p = partPass{}
}

// calls is the number of Timing calls of one micro-batch's pass of unit.
func (m *recutMeter) calls(unit int, pass models.Pass) int {
	n := 1
	if unit >= 0 && unit < m.layers {
		n = 2 // a block: attention, then the MLP
	}
	if m.recompute && pass == models.PassI {
		n *= 2 // the recomputed forward, then the backward
	}
	return n
}

// endStep closes a step of window length window, which took stepS seconds.
func (m *recutMeter) endStep(stepS float64, window int) {
	if m == nil {
		return
	}
	m.open = false
	m.since++
	if m.warmup && m.since == 1 && window > 1 {
		return
	}
	for u, t := range m.step {
		w := m.window[u]
		if w == nil {
			w = &[3][]float64{}
			m.window[u] = w
		}
		for k := range 3 {
			w[k] = append(w[k], t[k]...)
		}
	}
	m.stepS = append(m.stepS, stepS)
}

// vector is this rank's contribution to the agreed costs: per unit (the
// embedding, every block, the head) the median micro-batch time of each
// pass over the window, zero for units it does not hold, then its median
// step time.
func (m *recutMeter) vector() []float64 {
	v := make([]float64, 3*(m.layers+2)+1)
	for u, w := range m.window {
		for k := range 3 {
			v[3*(u+1)+k] = median(w[k])
		}
	}
	v[len(v)-1] = median(m.stepS)
	return v
}

// agreeCosts all-reduces every rank's measurements over the world: each unit
// is measured by one rank of each replica, so the sum over the world divided
// by the replicas is their mean, and the all-reduce leaves the same bits on
// every rank. It returns the units' costs and the median step time of rank 0.
func (rb *rebalancer) agreeCosts(ctx context.Context, step int) ([]UnitCost, float64, error) {
	L := rb.cfg.Model.Layers
	v := rb.meter.vector()
	if rb.job.Rank != 0 {
		v[len(v)-1] = 0
	}
	wctx, cancel := rb.waitCtx(ctx)
	defer cancel()
	if err := rb.job.Comm.AllReduce(wctx, collective.F64(v), collective.Sum); err != nil {
		return nil, 0, fmt.Errorf("rebalance after step %d: all-reduce of the measured block times: %w", step+1, err)
	}
	dp := float64(rb.cfg.DP)
	costs := make([]UnitCost, L+2)
	for u := range costs {
		costs[u] = UnitCost{v[3*u] / dp, v[3*u+1] / dp, v[3*u+2] / dp}
	}
	return costs, v[len(v)-1], nil
}
