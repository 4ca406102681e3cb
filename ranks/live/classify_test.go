package live

import (
	"strings"
	"testing"
	"time"
)

func TestClassify(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	ago := func(s float64) time.Time { return now.Add(-time.Duration(s * float64(time.Second))) }
	recv := Report{Step: 3, Doing: "RECV_F mb 3 from rank 1", Peer: 1}
	at := func(r Report, since, at float64) Report { r.Since, r.At = ago(since), ago(at); return r }
	for _, c := range []struct {
		name     string
		rep      Report
		ok, done bool
		stepS    float64
		status   string
		why      string // a part of it
		forS     float64
	}{
		{"no report yet", Report{}, false, false, 0.2, "waiting", "no report yet", 0},
		{"in an action for a moment", at(recv, 0.5, 0.2), true, false, 0.2, "ok", "", 0.3},
		{"a long action but a slow run", at(recv, 20, 0.5), true, false, 10, "ok", "", 19.5},
		{"stuck in a receive, peer named", at(recv, 20.5, 0.5), true, false, 0.2, "stuck", "in RECV_F mb 3 from rank 1 for 20 s: waiting on rank 1", 20},
		{"stuck in a compute: no peer", at(Report{Doing: "F mb 1 of stage 0", Peer: -1}, 9, 1), true, false, 0.2, "stuck", "in F mb 1 of stage 0 for 8 s", 8},
		{"just under five seconds is not stuck", at(recv, 4.9, 0), true, false, 0.01, "ok", "", 4.9},
		{"silent: reports stopped", at(recv, 10, 4), true, false, 0.2, "silent", "no report for 4 s: stopped", 6},
		{"silent wins over stuck", at(recv, 30, 10), true, false, 0.2, "silent", "last seen in RECV_F mb 3 from rank 1", 20},
		{"the run is done", at(recv, 30, 10), true, true, 0.2, "done", "", 0},
		{"a clock that moved back gives no negative time", at(recv, 1, 2), true, false, 0.2, "ok", "", 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			st, why, forS := Classify(c.rep, c.ok, now, c.stepS, c.done)
			if st != c.status || !strings.Contains(why, c.why) || (c.why == "" && why != "") {
				t.Errorf("Classify = %q, %q; want %q with %q", st, why, c.status, c.why)
			}
			if d := forS - c.forS; d > 1e-9 || d < -1e-9 {
				t.Errorf("for %v s, want %v", forS, c.forS)
			}
		})
	}
}

func TestStuckAfter(t *testing.T) {
	for _, c := range []struct {
		stepS float64
		want  time.Duration
	}{{0, 5 * time.Second}, {1, 5 * time.Second}, {2, 6 * time.Second}, {10, 30 * time.Second}} {
		if got := StuckAfter(c.stepS); got != c.want {
			t.Errorf("StuckAfter(%v) = %v, want %v", c.stepS, got, c.want)
		}
	}
}
