package live

import (
	"fmt"
	"time"
)

// SilentAfter is how old a rank's last report may be before the rank is
// called silent: three missed publications (a rank that is stopped, hung
// outside Go's scheduler, or gone).
const SilentAfter = 3 * PublishEvery

// StuckAfter is how long a rank may be in one action before it is called
// stuck: three steps of the run's recent pace, and never under five seconds,
// so a slow first step or a checkpoint is not a false alarm.
func StuckAfter(stepS float64) time.Duration {
	return max(5*time.Second, time.Duration(3*stepS*float64(time.Second)))
}

// Classify decides a rank's status from its latest report (ok false: none
// yet) at now, given the run's typical step time; done means the run has
// finished. It returns the status, why (for the red ones, with the peer
// named), and how long the rank had been in its action when it last reported.
func Classify(rep Report, ok bool, now time.Time, stepS float64, done bool) (status, why string, forS float64) {
	switch {
	case done:
		return "done", "", 0
	case !ok:
		return "waiting", "no report yet", 0
	}
	// How long it had been in its action when it last reported: a rank
	// reports once a second, so between reports this is what is known.
	in := max(0, rep.At.Sub(rep.Since))
	forS = in.Seconds()
	if quiet := now.Sub(rep.At); quiet > SilentAfter {
		return "silent", fmt.Sprintf("no report for %.0f s: stopped (SIGSTOP, Ctrl-Z), hung or gone; last seen in %s", quiet.Seconds(), rep.Doing), forS
	}
	if in > StuckAfter(stepS) {
		why = fmt.Sprintf("in %s for %.0f s", rep.Doing, in.Seconds())
		if rep.Peer >= 0 {
			why += fmt.Sprintf(": waiting on rank %d", rep.Peer)
		}
		return "stuck", why, forS
	}
	return "ok", "", forS
}
