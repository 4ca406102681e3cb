package svgdraw

import (
	"math"
	"strconv"
)

// NiceTicks returns about n+1 evenly spaced round values from 0 up to the
// first one at or above top (steps of 1, 2, 2.5 or 5 times a power of ten).
// A top of 0 or less gives 0 and 1.
func NiceTicks(top float64, n int) []float64 {
	if top <= 0 || n < 1 {
		return []float64{0, 1}
	}
	raw := top / float64(n)
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	step := 10 * mag
	for _, m := range []float64{1, 2, 2.5, 5} {
		if raw <= m*mag*(1+1e-9) {
			step = m * mag
			break
		}
	}
	k := int(math.Ceil(top/step - 1e-9))
	ticks := make([]float64, k+1)
	for i := range ticks {
		ticks[i] = float64(i) * step
	}
	return ticks
}

// CompactNum formats v in at most three significant digits with a k, M or G
// suffix for thousands, millions and billions: 0, 0.25, 950, 1.2k, 35k, 1.1M.
func CompactNum(v float64) string {
	if v == 0 {
		return "0"
	}
	sign := ""
	if v < 0 {
		sign, v = "-", -v
	}
	r, _ := strconv.ParseFloat(strconv.FormatFloat(v, 'g', 3, 64), 64)
	suffix, div := "", 1.0
	switch {
	case r >= 1e9:
		suffix, div = "G", 1e9
	case r >= 1e6:
		suffix, div = "M", 1e6
	case r >= 1e3:
		suffix, div = "k", 1e3
	}
	return sign + strconv.FormatFloat(r/div, 'f', -1, 64) + suffix
}

// LogTicks are round values (1, 2 and 5 times a power of ten; every digit
// where those give fewer than three) for a log axis from the first at or
// below lo to the first at or above hi.
func LogTicks(lo, hi float64) []float64 {
	if !(lo > 0) || hi <= lo {
		return []float64{math.Max(lo, 1), math.Max(lo, 1) * 2}
	}
	ticks := logTicksOf(lo, hi, []float64{1, 2, 5})
	if len(ticks) < 3 {
		ticks = logTicksOf(lo, hi, []float64{1, 2, 3, 4, 5, 6, 7, 8, 9})
	}
	return ticks
}

// logTicksOf is LogTicks with the multiples mults of each power of ten.
func logTicksOf(lo, hi float64, mults []float64) []float64 {
	var ticks []float64
	for p := math.Pow(10, math.Floor(math.Log10(lo))); ; p *= 10 {
		for _, m := range mults {
			v := m * p
			if v < lo*(1-1e-9) {
				ticks = []float64{v} // the last one below lo
				continue
			}
			ticks = append(ticks, v)
			if v >= hi*(1-1e-9) {
				return ticks
			}
		}
	}
}

// ThinLabels says which of the positions xs (ascending) keep a label so that
// labels stand at least gap apart, the first and the last always kept.
func ThinLabels(xs []float64, gap float64) []bool {
	shown := make([]bool, len(xs))
	last := math.Inf(-1)
	for i, x := range xs {
		if x-last >= gap {
			shown[i], last = true, x
		}
	}
	if n := len(xs); n > 1 && !shown[n-1] {
		shown[n-1] = true
		for i := n - 2; i > 0 && xs[n-1]-xs[i] < gap; i-- {
			shown[i] = false
		}
	}
	return shown
}
