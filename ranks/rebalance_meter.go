package ranks

import (
	"context"
	"fmt"
	"time"

	"github.com/pplaunch/pplaunch/collective"
	"github.com/pplaunch/pplaunch/models"
)

// recutMeter keeps one rank's measurements for --rebalance over the window
// since the last check: per unit and step the mean seconds of a
// micro-batch's passes (through the stages' Timing hooks), and the rank's
// step times. The first step after the start or a move is a warm-up (fresh
// buffers, first uploads) and is left out, unless it is the only step of the
// window. Only the step's own passes count, not the evaluation's or the
// sample's forwards between steps. A nil meter measures nothing.
type recutMeter struct {
	micro  int
	open   bool               // a step is being measured
	cur    map[int]*UnitCost  // unit -> this step's summed seconds
	steps  map[int][]UnitCost // unit -> per-step means, the counted steps
	stepS  []float64          // the counted steps' times
	since  int                // steps of the window so far, counted or not
	warmup bool               // the window's first step is left out
}

func newRecutMeter(micro int) *recutMeter {
	m := &recutMeter{micro: micro}
	m.reset(true)
	return m
}

// reset starts a window; warmup leaves its first step out.
func (m *recutMeter) reset(warmup bool) {
	m.cur, m.steps, m.stepS, m.since, m.warmup = map[int]*UnitCost{}, map[int][]UnitCost{}, nil, 0, warmup
}

// begin starts measuring a step.
func (m *recutMeter) begin() {
	if m != nil {
		clear(m.cur)
		m.open = true
	}
}

// hook is the stages' Timing hook.
func (m *recutMeter) hook(unit int, pass models.Pass, d time.Duration, _ int64) {
	if !m.open {
		return
	}
	c := m.cur[unit]
	if c == nil {
		c = &UnitCost{}
		m.cur[unit] = c
	}
	switch pass {
	case models.PassF:
		c.F += d.Seconds()
	case models.PassI:
		c.I += d.Seconds()
	case models.PassW:
		c.W += d.Seconds()
	}
}

// endStep closes a step of window length window, which took stepS seconds.
func (m *recutMeter) endStep(stepS float64, window int) {
	if m == nil {
		return
	}
	m.open = false
	m.since++
	if !(m.warmup && m.since == 1 && window > 1) {
		n := float64(m.micro)
		for u, c := range m.cur {
			m.steps[u] = append(m.steps[u], UnitCost{c.F / n, c.I / n, c.W / n})
		}
		m.stepS = append(m.stepS, stepS)
	}
	clear(m.cur)
}

// vector is this rank's contribution to the agreed costs: per unit (the
// embedding, every block, the head of a model of layers blocks) the median
// over the counted steps of each pass, zero for units it does not hold, then
// its median step time.
func (m *recutMeter) vector(layers int) []float64 {
	v := make([]float64, 3*(layers+2)+1)
	for u, cs := range m.steps {
		f, i, w := make([]float64, len(cs)), make([]float64, len(cs)), make([]float64, len(cs))
		for k, c := range cs {
			f[k], i[k], w[k] = c.F, c.I, c.W
		}
		copy(v[3*(u+1):], []float64{median(f), median(i), median(w)})
	}
	v[len(v)-1] = median(m.stepS)
	return v
}

// agreeCosts all-reduces every rank's measurements over the world: each unit
// is measured by one rank of each replica, so the sum over the world divided
// by the replicas is their mean, and the all-reduce leaves the same bits on
// every rank. It returns the units' costs and the median step time of rank 0.
func (t *trainer) agreeCosts(ctx context.Context, step int) ([]UnitCost, float64, error) {
	L := t.cfg.Model.Layers
	v := t.meter.vector(L)
	if t.job.Rank != 0 {
		v[len(v)-1] = 0
	}
	wctx, cancel := t.waitCtx(ctx)
	defer cancel()
	if err := t.job.Comm.AllReduce(wctx, collective.F64(v), collective.Sum); err != nil {
		return nil, 0, fmt.Errorf("rebalance after step %d: all-reduce of the measured block times: %w", step+1, err)
	}
	dp := float64(t.cfg.DP)
	costs := make([]UnitCost, L+2)
	for u := range costs {
		costs[u] = UnitCost{v[3*u] / dp, v[3*u+1] / dp, v[3*u+2] / dp}
	}
	return costs, v[len(v)-1], nil
}
