package main

import (
	"encoding/json"
	"testing"
)

// checkTraceFlows checks that a trace holds want flow pairs, one per
// transfer: each id has one start and one end, on different ranks, on a
// transfer thread. (The order of their times is not checked: the ranks'
// clocks are aligned only to within the alignment's error.)
func checkTraceFlows(t *testing.T, trace []byte, want int) {
	t.Helper()
	var doc struct {
		TraceEvents []struct {
			Ph  string  `json:"ph"`
			ID  string  `json:"id"`
			Pid int     `json:"pid"`
			Tid int     `json:"tid"`
			Ts  float64 `json:"ts"`
		} `json:"traceEvents"`
	}
	if err := json.Unmarshal(trace, &doc); err != nil {
		t.Fatal(err)
	}
	type end struct {
		pid, tid int
		ts       float64
	}
	starts, ends := map[string]end{}, map[string]end{}
	for _, e := range doc.TraceEvents {
		switch e.Ph {
		case "s", "f":
			m := map[string]map[string]end{"s": starts, "f": ends}[e.Ph]
			if _, dup := m[e.ID]; dup {
				t.Errorf("flow %s: two %q events", e.ID, e.Ph)
			}
			m[e.ID] = end{e.Pid, e.Tid, e.Ts}
		}
	}
	if len(starts) != want || len(ends) != want {
		t.Errorf("%d flow starts and %d ends, want %d transfers", len(starts), len(ends), want)
	}
	for id, s := range starts {
		f, ok := ends[id]
		if !ok || s.pid == f.pid || s.tid == 0 || f.tid == 0 {
			t.Errorf("flow %s: from %+v to %+v (found %v)", id, s, f, ok)
		}
	}
}
