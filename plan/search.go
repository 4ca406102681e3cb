package plan

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/pplaunch/pplaunch/schedules"
)

// Row is one layout the search predicted; its exported fields are
// plan --json's output for a search.
type Row struct {
	PP          int      `json:"pp"`
	DP          int      `json:"dp"`
	Schedule    string   `json:"schedule"`
	V           int      `json:"v"`
	Micro       int      `json:"microbatches"`
	MicroSize   int      `json:"microbatch_size"`
	Recompute   bool     `json:"recompute"`
	Zero        int      `json:"zero"`
	Cut         []int    `json:"cut"`
	StepS       float64  `json:"step_s"`
	Bubble      float64  `json:"bubble"`
	MemoryBytes int64    `json:"memory_bytes"` // the largest rank's
	Parts       MemParts `json:"memory_parts"` // of that rank
	Fits        bool     `json:"fits"`
	Why         string   `json:"why"`
	// withZero is, for a layout of several replicas searched without ZeRO,
	// its largest rank's memory under --zero 1 (0: not predicted).
	withZero int64
}

// MemParts is one rank's predicted memory by kind.
type MemParts struct {
	Params      int64 `json:"params"`
	Grads       int64 `json:"grads"`
	Optimizer   int64 `json:"optimizer"`
	Activations int64 `json:"activations"`
	Transient   int64 `json:"transient"`
}

// Space lists the layouts of world ranks training global sequences
// per step: pp × dp = world (at most one stage per block), every built-in
// schedule (interleaved with v = 2; on one rank only those of one stage),
// every power-of-two micro-batch size
// whose count divides the replica's batch (a power-of-two count with
// dp > 1, as training requires), with and without recomputation.
func Space(p *Profile, world, global int) []Candidate {
	var out []Candidate
	for pp := 1; pp <= world; pp++ {
		if world%pp != 0 {
			continue
		}
		dp := world / pp
		if global%dp != 0 {
			continue
		}
		per := global / dp
		for _, name := range schedules.Names {
			v, err := schedules.Resolve(name, pp, 1, 0)
			if err != nil || pp*v > p.Model.Layers || (pp == 1 && v > 1) {
				continue // too many stages, or several stages on the only rank
			}
			for b := 1; b <= per; b *= 2 {
				m := per / b
				if per%b != 0 || !MicroFitsDP(dp, m) {
					continue
				}
				for _, rc := range []bool{false, true} {
					out = append(out, Candidate{PP: pp, DP: dp, Schedule: name, Virtual: v, Micro: m, MicroSize: b, Recompute: rc})
				}
			}
		}
	}
	return out
}

// Search predicts every layout of Space under ZeRO stage zero and
// says of each whether it fits budget bytes per rank; rows come fastest
// first, those that fit before those that do not.
func Search(p *Profile, world, global int, budget int64, zero int) ([]Row, error) {
	var rows []Row
	for _, c := range Space(p, world, global) {
		c.Zero = zero
		pr, err := Predict(p, c)
		if err != nil {
			return nil, fmt.Errorf("%s on pp %d: %w", c.Schedule, c.PP, err)
		}
		r := Row{PP: c.PP, DP: c.DP, Schedule: c.Schedule, V: c.Virtual, Micro: c.Micro, MicroSize: c.MicroSize,
			Recompute: c.Recompute, Zero: zero, Cut: pr.Cut, StepS: pr.StepS, Bubble: pr.Bubble}
		top := slices.Index(pr.Memory, slices.Max(pr.Memory))
		r.MemoryBytes = pr.Memory[top]
		r.Parts = MemParts{pr.Params[top], pr.Grads[top], pr.Optim[top], pr.Activations[top], pr.Transient[top]}
		r.Fits = budget <= 0 || r.MemoryBytes <= budget
		if !r.Fits && zero == 0 && c.DP > 1 {
			c.Zero = 1
			if z, err := Predict(p, c); err == nil {
				r.withZero = slices.Max(z.Memory)
			}
		}
		rows = append(rows, r)
	}
	slices.SortStableFunc(rows, func(a, b Row) int {
		if a.Fits != b.Fits {
			if a.Fits {
				return -1
			}
			return 1
		}
		if a.StepS != b.StepS {
			if a.StepS < b.StepS {
				return -1
			}
			return 1
		}
		return cmp.Compare(a.MemoryBytes, b.MemoryBytes)
	})
	explain(rows, budget)
	return rows, nil
}
