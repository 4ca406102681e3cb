package plan

// BubbleForm is the textbook bubble fraction of a built-in schedule of p
// ranks, m micro-batches and v virtual stages per rank, and its formula,
// where one is known for costs c (equal stages, free transfers); "" and nil
// where none is.
func BubbleForm(name string, p, m, v int, c RankCosts) (string, *float64) {
	if c.Comm != 0 {
		return "", nil
	}
	frac := func(num, den int) *float64 { f := float64(num) / float64(den); return &f }
	split := c.F == c.B-c.W && c.F == c.W // F, I and W take one time each
	switch {
	case name == "gpipe" || name == "1f1b":
		return "(P-1)/(M+P-1)", frac(p-1, m+p-1)
	case name == "interleaved" && m%p == 0:
		return "(P-1)/(v·M+P-1)", frac(p-1, v*m+p-1)
	case name == "zb-h1" && m >= p && split:
		return "(P-1)/(3M+P-1)", frac(p-1, 3*m+p-1)
	case name == "zb-v" && m >= 2*p-1 && split:
		return "(P-1)/(6M+P-1)", frac(p-1, 6*m+p-1)
	}
	return "", nil
}

// PeakForm is the largest rank's peak of live activations, in micro-batches,
// that the papers give for a built-in schedule, and its formula. It depends
// only on each rank's order, not on the costs. V-Half and V-Min reach theirs
// once M >= P (Qi et al. 2024, "Pipeline Parallelism with Controllable
// Memory").
func PeakForm(name string, p, m int) (string, *float64) {
	val := func(n int) *float64 { f := float64(n); return &f }
	switch {
	case name == "gpipe":
		return "M", val(m)
	case name == "1f1b":
		return "min(P,M)", val(min(p, m))
	case name == "v-half" && m >= p:
		return "(P+2)/2", val((p + 2) / 2)
	case name == "v-min" && m >= p:
		return "(P+4)/3", val((p + 4) / 3)
	}
	return "", nil
}
