package schedules

import (
	"bytes"
	"encoding/json"
	"math"
	"reflect"
	"strings"
	"testing"
)

// TestTraceWriterMatchesWriteTrace: a trace streamed step by step holds the
// same events as WriteTrace's, and ReadTrace gives the timeline back.
func TestTraceWriterMatchesWriteTrace(t *testing.T) {
	s, err := Generate("zb-h1", 2, 3, 0)
	if err != nil {
		t.Fatal(err)
	}
	tl, err := Simulate(s, Costs{Default: StageCost{F: 0.001, I: 0.001, W: 0.001}, Comm: 0.0002})
	if err != nil {
		t.Fatal(err)
	}
	var whole, streamed bytes.Buffer
	if err := WriteTrace(&whole, tl); err != nil {
		t.Fatal(err)
	}
	tw := NewTraceWriter(&streamed, len(tl.Ranks))
	if err := tw.Add(tl); err != nil {
		t.Fatal(err)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	var a, b struct{ TraceEvents []map[string]any }
	if err := json.Unmarshal(whole.Bytes(), &a); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(streamed.Bytes(), &b); err != nil {
		t.Fatalf("streamed trace is not JSON: %v\n%s", err, streamed.String())
	}
	// WriteTrace puts each rank's names before its spans, the stream all names first.
	key := func(evs []map[string]any) map[string]int {
		m := map[string]int{}
		for _, e := range evs {
			j, _ := json.Marshal(e)
			m[string(j)]++
		}
		return m
	}
	if !reflect.DeepEqual(key(a.TraceEvents), key(b.TraceEvents)) {
		t.Errorf("streamed events differ from WriteTrace's")
	}
	back, err := ReadTrace(&streamed)
	if err != nil {
		t.Fatal(err)
	}
	if len(back.Ranks) != len(tl.Ranks) {
		t.Fatalf("read back %d ranks, want %d", len(back.Ranks), len(tl.Ranks))
	}
	for r := range tl.Ranks {
		if len(back.Ranks[r]) != len(tl.Ranks[r]) {
			t.Fatalf("rank %d: %d spans back, want %d", r, len(back.Ranks[r]), len(tl.Ranks[r]))
		}
		for i, sp := range tl.Ranks[r] {
			g := back.Ranks[r][i]
			if g.Action != sp.Action || math.Abs(g.Start-sp.Start) > 1e-12 || math.Abs(g.End-sp.End) > 1e-12 {
				t.Errorf("rank %d span %d: %+v, want %+v", r, i, g, sp)
			}
		}
	}
	if _, err := ReadTrace(bytes.NewReader([]byte(`{"traceEvents":[{"name":"nope","ph":"X","pid":0}]}`))); err == nil {
		t.Error("a trace event with a bad action name was read")
	}
}

// TestTraceFlows opens traces (simulated with transfer time, and two steps
// streamed) and checks that every transfer has exactly one flow pair: a
// start on the sender's transfer thread inside its SEND span and an end
// bound to the receiver's RECV span, with an id no other pair has; and that
// no two spans of one transfer thread overlap.
func TestTraceFlows(t *testing.T) {
	for _, name := range []string{"1f1b", "interleaved", "zb-v", "dualpipev"} {
		s, err := Generate(name, 3, 6, 0)
		if err != nil {
			t.Fatal(err)
		}
		tl, err := Simulate(s, Costs{Default: StageCost{F: 0.001, B: 0.002, I: 0.001, W: 0.001}, Comm: 0.0005})
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		tw := NewTraceWriter(&b, s.P)
		for step := range 2 { // the second step starts when the first has ended
			shifted := &Timeline{Ranks: make([][]Span, len(tl.Ranks))}
			for r, spans := range tl.Ranks {
				for _, sp := range spans {
					sp.Start, sp.End = sp.Start+float64(step), sp.End+float64(step)
					shifted.Ranks[r] = append(shifted.Ranks[r], sp)
				}
			}
			if err := tw.Add(shifted); err != nil {
				t.Fatal(err)
			}
		}
		if err := tw.Close(); err != nil {
			t.Fatal(err)
		}
		checkFlows(t, name, b.Bytes(), 2*countSends(s))
	}
}

func countSends(s *Schedule) int {
	n := 0
	for _, l := range s.Ranks {
		for _, a := range l {
			if a.Kind == SendF || a.Kind == SendB {
				n++
			}
		}
	}
	return n
}

func checkFlows(t *testing.T, name string, trace []byte, transfers int) {
	t.Helper()
	var doc struct{ TraceEvents []traceEvent }
	if err := json.Unmarshal(trace, &doc); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	type thread struct{ pid, tid int }
	spans := map[thread][]traceEvent{}
	starts, ends := map[string]traceEvent{}, map[string]traceEvent{}
	for _, e := range doc.TraceEvents {
		switch e.Ph {
		case "X":
			spans[thread{e.Pid, e.Tid}] = append(spans[thread{e.Pid, e.Tid}], e)
		case "s", "f":
			m := starts
			if e.Ph == "f" {
				m = ends
				if e.BP != "e" {
					t.Errorf("%s: flow end %+v not bound to its enclosing slice", name, e)
				}
			}
			if _, dup := m[e.ID]; dup {
				t.Errorf("%s: two flow %s events with id %s", name, e.Ph, e.ID)
			}
			m[e.ID] = e
		}
	}
	if len(starts) != transfers || len(ends) != transfers {
		t.Fatalf("%s: %d flow starts and %d ends for %d transfers", name, len(starts), len(ends), transfers)
	}
	inside := func(e traceEvent, kind string) bool {
		for _, sp := range spans[thread{e.Pid, e.Tid}] {
			if strings.Contains(sp.Name, kind) && sp.Ts <= e.Ts && e.Ts <= sp.Ts+sp.Dur {
				return true
			}
		}
		return false
	}
	for id, s := range starts {
		f, ok := ends[id]
		if !ok {
			t.Fatalf("%s: flow %s has no end", name, id)
		}
		if s.Tid == 0 || f.Tid == 0 || s.Pid == f.Pid || !inside(s, "SEND") || !inside(f, "RECV") || f.Ts < s.Ts {
			t.Errorf("%s: flow %s from %+v to %+v is not from a send to a receive on another rank's transfer thread", name, id, s, f)
		}
	}
	for th, list := range spans {
		if th.tid == 0 {
			continue
		}
		for i := range list {
			for j := range i {
				a, b := list[i], list[j]
				if a.Ts < b.Ts+b.Dur-1e-6 && b.Ts < a.Ts+a.Dur-1e-6 { // µs from seconds: allow rounding where one ends as the next starts
					t.Errorf("%s: rank %d thread %d: %s and %s overlap", name, th.pid, th.tid, a.Name, b.Name)
				}
			}
		}
	}
}
