package plan

import "fmt"

// explain writes each row's verdict.
func explain(rows []Row, budget int64) {
	best := -1
	for i := range rows {
		r := &rows[i]
		switch {
		case !r.Fits:
			r.Why = fmt.Sprintf("rejected: rank needs %s > budget %s (params %s, grads %s, optimizer %s, activations %s)",
				FormatBytes(r.MemoryBytes), FormatBytes(budget), FormatBytes(r.Parts.Params), FormatBytes(r.Parts.Grads), FormatBytes(r.Parts.Optimizer), FormatBytes(r.Parts.Activations+r.Parts.Transient))
			if r.withZero > 0 && r.withZero <= budget {
				r.Why += fmt.Sprintf("; fits with --zero 1 (%s)", FormatBytes(r.withZero))
			}
		case best < 0:
			best = i
			r.Why = "kept: the fastest that fits"
			if budget > 0 {
				r.Why += fmt.Sprintf(" (%s of %s)", FormatBytes(r.MemoryBytes), FormatBytes(budget))
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
