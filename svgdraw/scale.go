package svgdraw

import "math"

// Log2Pos places n on a log2 axis that puts lo at x0 and hi at x1; when lo
// and hi are the same it puts every n in the middle.
func Log2Pos(n, lo, hi int, x0, x1 float64) float64 {
	if lo == hi {
		return (x0 + x1) / 2
	}
	a, b := math.Log2(float64(lo)), math.Log2(float64(hi))
	return x0 + (math.Log2(float64(n))-a)/(b-a)*(x1-x0)
}

// LogScale maps [v0, v1] onto [p0, p1] on a log axis.
func LogScale(v0, v1, p0, p1 float64) func(float64) float64 {
	a, b := math.Log(v0), math.Log(v1)
	return func(v float64) float64 { return p0 + (math.Log(v)-a)/(b-a)*(p1-p0) }
}

// LinearScale maps [v0, v1] onto [p0, p1].
func LinearScale(v0, v1, p0, p1 float64) func(float64) float64 {
	return func(v float64) float64 { return p0 + (v-v0)/(v1-v0)*(p1-p0) }
}
