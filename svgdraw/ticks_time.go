package svgdraw

import (
	"fmt"
	"math"
	"strconv"
)

// TimeTicks are round tick marks for a time axis of span seconds: a step
// of 1, 2 or 5 times a power of ten giving at most max ticks, and the unit
// to label them in (µs, ms or s: the largest in which the span is at least
// 1).
type TimeTicks struct {
	step  float64 // seconds between ticks
	unit  string
	scale float64 // multiply seconds by it to get unit
}

// NewTimeTicks picks the ticks for span seconds, at most max of them.
func NewTimeTicks(span float64, max int) TimeTicks {
	if !(span > 0) || max < 1 {
		return TimeTicks{step: 1, unit: "s", scale: 1}
	}
	raw := span / float64(max)
	p := math.Pow(10, math.Floor(math.Log10(raw)))
	step := 10 * p
	for _, m := range []float64{1, 2, 5} {
		if m*p >= raw*(1-1e-9) {
			step = m * p
			break
		}
	}
	t := TimeTicks{step: step, unit: "s", scale: 1}
	switch {
	case span < 1e-3:
		t.unit, t.scale = "µs", 1e6
	case span < 1:
		t.unit, t.scale = "ms", 1e3
	}
	return t
}

// Label writes tick value v (seconds) in the ticks' unit without float
// noise: 0.30000000000000004 s is "300 ms".
func (t TimeTicks) Label(v float64) string {
	x := v * t.scale
	digits := 0
	for s := t.step * t.scale; s < 1-1e-9 && digits < 6; s *= 10 {
		digits++
	}
	return strconv.FormatFloat(x, 'f', digits, 64) + " " + t.unit
}

// At lists the tick values in [0, span].
func (t TimeTicks) At(span float64) []float64 {
	var out []float64
	for i := 0; ; i++ {
		v := float64(i) * t.step
		if v > span*(1+1e-9) || i > 1000 {
			return out
		}
		out = append(out, v)
	}
}

// Duration writes d seconds in the unit that suits it, three
// significant digits: 0.0123 s is "12.3 ms".
func Duration(d float64) string {
	a := math.Abs(d)
	switch {
	case a < 1e-3:
		return fmt.Sprintf("%.3g µs", d*1e6)
	case a < 1:
		return fmt.Sprintf("%.3g ms", d*1e3)
	}
	return fmt.Sprintf("%.3g s", d)
}
