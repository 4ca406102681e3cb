package report

import (
	"fmt"
	"strconv"
	"strings"
)

// TraceSteps is what --trace-steps asks --trace-svg to draw: steps from..to
// counted from 1 as the console counts them (0, 0: the last; -1, -1: all).
type TraceSteps struct{ from, to int }

// ParseTraceSteps reads --trace-steps: "last", "all", a step N, or a range
// A-B.
func ParseTraceSteps(spec string) (TraceSteps, error) {
	switch spec {
	case "", "last":
		return TraceSteps{}, nil
	case "all":
		return TraceSteps{-1, -1}, nil
	}
	a, b, isRange := strings.Cut(spec, "-")
	from, err1 := strconv.Atoi(a)
	to, err2 := from, error(nil)
	if isRange {
		to, err2 = strconv.Atoi(b)
	}
	if err1 != nil || err2 != nil || from < 1 || to < from {
		return TraceSteps{}, fmt.Errorf("--trace-steps %q: want last, all, a step N or a range A-B of steps counted from 1 (e.g. 5 or 3-6)", spec)
	}
	return TraceSteps{from, to}, nil
}

// window is the trace's steps to draw, as indices [lo, hi) into the steps it
// holds, which are the run's steps first+1 .. first+count; a range past what
// ran is cut to it, and note says so ("" when nothing was cut).
func (w TraceSteps) window(first, count int) (lo, hi int, note string, err error) {
	switch {
	case count < 1:
		return 0, 0, "", fmt.Errorf("no whole step to draw")
	case w.from == 0:
		return count - 1, count, "", nil
	case w.from < 0:
		return 0, count, "", nil
	}
	lo, hi = max(w.from-1-first, 0), min(w.to-first, count)
	if lo >= hi {
		return 0, 0, "", fmt.Errorf("--trace-steps %d-%d: the run's trace holds steps %d..%d", w.from, w.to, first+1, first+count)
	}
	if lo != w.from-1-first || hi != w.to-first {
		note = fmt.Sprintf(" (of %d-%d asked; the trace holds %d..%d)", w.from, w.to, first+1, first+count)
	}
	return lo, hi, note, nil
}
