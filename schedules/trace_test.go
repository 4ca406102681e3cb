package schedules

import (
	"bytes"
	"encoding/json"
	"math"
	"reflect"
	"testing"
)

// TestTraceWriterMatchesWriteTrace: a trace streamed rank by rank holds the
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
	for r, spans := range tl.Ranks {
		if err := tw.Add(r, spans); err != nil {
			t.Fatal(err)
		}
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
