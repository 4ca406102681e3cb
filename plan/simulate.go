package plan

import (
	"fmt"

	"github.com/pplaunch/pplaunch/schedules"
)

// RankCosts are the times of one micro-batch through one rank's layers, in
// any unit (plan gives ms): the forward F, the full backward B of which W is
// the weight-gradient part (zero-bubble schedules run I = B-W and W), and
// one activation or gradient transfer Comm.
type RankCosts struct {
	F, B, W, Comm float64
}

// Spread is c spread over a rank's v virtual stages: the simulator's costs.
func (c RankCosts) Spread(v int) schedules.Costs {
	d := float64(v)
	return schedules.Costs{
		Default: schedules.StageCost{F: c.F / d, B: c.B / d, I: (c.B - c.W) / d, W: c.W / d},
		Comm:    c.Comm,
	}
}

// Result is one simulated schedule; its exported fields but the schedule
// and the timeline are plan --json's output, times in the costs' unit.
type Result struct {
	Schedule        string    `json:"schedule"`
	P               int       `json:"p"`
	V               int       `json:"v"`
	M               int       `json:"m"`
	Makespan        float64   `json:"makespan"`
	Ideal           float64   `json:"ideal"`
	Bubble          float64   `json:"bubble"`
	BubbleFormula   *float64  `json:"bubble_formula,omitempty"`
	Formula         string    `json:"formula,omitempty"`
	PeakActivations []float64 `json:"peak_activations"`
	PeakFormulaVal  *float64  `json:"peak_formula,omitempty"`
	PeakFormula     string    `json:"peak_formula_text,omitempty"`
	PeakBytes       []int64   `json:"peak_activation_bytes,omitempty"`
	Busy            []float64 `json:"busy"`
	Idle            []float64 `json:"idle"`
	TimeUnit        string    `json:"time_unit"`
	// Notes say which of torch's actions a CSV file held that pplaunch
	// drops, and what stands for each (schedules.CSVNotes).
	Notes []string `json:"notes,omitempty"`

	Sched    *schedules.Schedule `json:"-"`
	Timeline *schedules.Timeline `json:"-"`
}

// Simulate simulates s, named name, under costs c per rank; actBytes > 0
// is what one micro-batch holds on one rank, spread over its virtual
// stages, for each rank's peak in bytes.
func Simulate(name string, s *schedules.Schedule, c RankCosts, actBytes int64) (*Result, error) {
	tl, err := schedules.Simulate(s, c.Spread(s.V))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	var held []int64
	if actBytes > 0 {
		held = make([]int64, s.Stages())
		for i := range held {
			held[i] = actBytes / int64(s.V)
		}
	}
	st, err := schedules.Analyze(s, tl, held)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	res := &Result{Schedule: name, P: s.P, V: s.V, M: s.M, Makespan: st.Makespan, Bubble: st.Bubble,
		PeakActivations: st.PeakLive, PeakBytes: st.PeakBytes, Busy: st.Busy, Idle: st.Idle, TimeUnit: "ms", Sched: s, Timeline: tl}
	for _, b := range st.Busy {
		res.Ideal = max(res.Ideal, b)
	}
	return res, nil
}

// SimulateBuiltin generates the built-in schedule name for p ranks, m
// micro-batches and v virtual stages per rank (0: the schedule's own) and
// simulates it, with the closed forms known for it.
func SimulateBuiltin(name string, p, m, v int, c RankCosts, actBytes int64) (*Result, error) {
	s, err := schedules.Generate(name, p, m, v)
	if err != nil {
		return nil, err
	}
	res, err := Simulate(name, s, c, actBytes)
	if err != nil {
		return nil, err
	}
	res.Formula, res.BubbleFormula = BubbleForm(name, s.P, s.M, s.V, c)
	res.PeakFormula, res.PeakFormulaVal = PeakForm(name, s.P, s.M)
	return res, nil
}

// Compare simulates every built-in schedule for p ranks and m micro-batches,
// side by side; only interleaved takes v, the others run with their own.
func Compare(p, m, v int, c RankCosts, actBytes int64) ([]*Result, error) {
	var all []*Result
	for _, name := range schedules.Names {
		vv := 0
		if name == "interleaved" {
			vv = v
		}
		res, err := SimulateBuiltin(name, p, m, vv, c, actBytes)
		if err != nil {
			return nil, err
		}
		all = append(all, res)
	}
	return all, nil
}
