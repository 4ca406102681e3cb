package ranks

import "github.com/pplaunch/pplaunch/plan"

// median is the statistic a profile keeps of repeated measurements
// (plan.Median), for every median the trainer takes, so that the profile,
// the transfer report and a re-cut agree.
func median(xs []float64) float64 { return plan.Median(xs) }
