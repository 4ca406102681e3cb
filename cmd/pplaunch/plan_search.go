package main

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/pplaunch/pplaunch/ranks"
	"github.com/pplaunch/pplaunch/schedules"
)

// searchRow is one layout the search predicted; its exported fields are
// plan --json's output for a search.
type searchRow struct {
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
	Parts       memParts `json:"memory_parts"` // of that rank
	Fits        bool     `json:"fits"`
	Why         string   `json:"why"`
	// withZero is, for a layout of several replicas searched without ZeRO,
	// its largest rank's memory under --zero 1 (0: not predicted).
	withZero int64
}

// memParts is one rank's predicted memory by kind.
type memParts struct {
	Params      int64 `json:"params"`
	Grads       int64 `json:"grads"`
	Optimizer   int64 `json:"optimizer"`
	Activations int64 `json:"activations"`
	Transient   int64 `json:"transient"`
}

// searchSpace lists the layouts of world ranks training global sequences
// per step: pp × dp = world (at most one stage per block), every built-in
// schedule (interleaved with v = 2; on one rank only those of one stage),
// every power-of-two micro-batch size
// whose count divides the replica's batch (a power-of-two count with
// dp > 1, as training requires), with and without recomputation.
func searchSpace(p *ranks.Profile, world, global int) []ranks.Candidate {
	var out []ranks.Candidate
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
				if per%b != 0 || !ranks.MicroFitsDP(dp, m) {
					continue
				}
				for _, rc := range []bool{false, true} {
					out = append(out, ranks.Candidate{PP: pp, DP: dp, Schedule: name, Virtual: v, Micro: m, MicroSize: b, Recompute: rc})
				}
			}
		}
	}
	return out
}

// search predicts every layout of searchSpace under ZeRO stage zero and
// says of each whether it fits budget bytes per rank; rows come fastest
// first, those that fit before those that do not.
func search(p *ranks.Profile, world, global int, budget int64, zero int) ([]searchRow, error) {
	var rows []searchRow
	for _, c := range searchSpace(p, world, global) {
		c.Zero = zero
		pr, err := ranks.Predict(p, c)
		if err != nil {
			return nil, fmt.Errorf("%s on pp %d: %w", c.Schedule, c.PP, err)
		}
		r := searchRow{PP: c.PP, DP: c.DP, Schedule: c.Schedule, V: c.Virtual, Micro: c.Micro, MicroSize: c.MicroSize,
			Recompute: c.Recompute, Zero: zero, Cut: pr.Cut, StepS: pr.StepS, Bubble: pr.Bubble}
		top := slices.Index(pr.Memory, slices.Max(pr.Memory))
		r.MemoryBytes = pr.Memory[top]
		r.Parts = memParts{pr.Params[top], pr.Grads[top], pr.Optim[top], pr.Activations[top], pr.Transient[top]}
		r.Fits = budget <= 0 || r.MemoryBytes <= budget
		if !r.Fits && zero == 0 && c.DP > 1 {
			c.Zero = 1
			if z, err := ranks.Predict(p, c); err == nil {
				r.withZero = slices.Max(z.Memory)
			}
		}
		rows = append(rows, r)
	}
	slices.SortStableFunc(rows, func(a, b searchRow) int {
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

// explain writes each row's verdict.
func explain(rows []searchRow, budget int64) {
	best := -1
	for i := range rows {
		r := &rows[i]
		switch {
		case !r.Fits:
			r.Why = fmt.Sprintf("rejected: rank needs %s > budget %s (params %s, grads %s, optimizer %s, activations %s)",
				bytesIEC(r.MemoryBytes), bytesIEC(budget), bytesIEC(r.Parts.Params), bytesIEC(r.Parts.Grads), bytesIEC(r.Parts.Optimizer), bytesIEC(r.Parts.Activations+r.Parts.Transient))
			if r.withZero > 0 && r.withZero <= budget {
				r.Why += fmt.Sprintf("; fits with --zero 1 (%s)", bytesIEC(r.withZero))
			}
		case best < 0:
			best = i
			r.Why = "kept: the fastest that fits"
			if budget > 0 {
				r.Why += fmt.Sprintf(" (%s of %s)", bytesIEC(r.MemoryBytes), bytesIEC(budget))
			}
		default:
			b := rows[best]
			r.Why = fmt.Sprintf("kept: %.3g× the best step", r.StepS/b.StepS)
			if r.StepS/b.StepS < 1.0005 {
				r.Why = "kept: as fast as the best"
			}
			if r.MemoryBytes < b.MemoryBytes {
				r.Why += fmt.Sprintf(", %.0f%% less memory", 100*(1-float64(r.MemoryBytes)/float64(b.MemoryBytes)))
			}
		}
	}
}

// parseBytes reads a size such as 12GiB, 512MiB, 1.5GB or 1000 (bytes).
func parseBytes(s string) (int64, error) {
	units := []struct {
		suffix string
		mult   float64
	}{{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}, {"TB", 1e12}, {"GB", 1e9}, {"MB", 1e6}, {"KB", 1e3}, {"B", 1}}
	t := strings.TrimSpace(s)
	mult := 1.0
	for _, u := range units {
		if strings.HasSuffix(t, u.suffix) {
			t, mult = strings.TrimSpace(strings.TrimSuffix(t, u.suffix)), u.mult
			break
		}
	}
	f, err := strconv.ParseFloat(t, 64)
	if err != nil || f <= 0 || math.IsInf(f, 0) || f*mult > 1<<62 {
		return 0, fmt.Errorf("%q: want a positive size such as 12GiB, 512MiB, 1.5GB or a byte count", s)
	}
	return int64(f * mult), nil
}

// bytesIEC writes n in the largest binary unit that keeps it at least 1.
func bytesIEC(n int64) string {
	f := float64(n)
	for _, u := range []string{"B", "KiB", "MiB", "GiB"} {
		if f < 1024 || u == "GiB" {
			switch {
			case u == "B":
				return fmt.Sprintf("%d B", n)
			case f < 10:
				return fmt.Sprintf("%.2f %s", f, u)
			case f < 100:
				return fmt.Sprintf("%.1f %s", f, u)
			}
			return fmt.Sprintf("%.0f %s", f, u)
		}
		f /= 1024
	}
	return ""
}
