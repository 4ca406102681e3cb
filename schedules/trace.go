package schedules

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
)

// TraceWriter writes Chrome trace JSON (as WriteTrace) as the spans come, so
// that a long run's timeline never has to be held in memory: the opening and
// the ranks' names first, then the events of each Add, then the closing.
type TraceWriter struct {
	w     *bufio.Writer
	first bool
	err   error
}

// NewTraceWriter starts a trace of ranks ranks on w.
func NewTraceWriter(w io.Writer, ranks int) *TraceWriter {
	t := &TraceWriter{w: bufio.NewWriter(w), first: true}
	t.w.WriteString(`{"traceEvents":[`)
	for r := range ranks {
		for _, e := range rankEvents(r) {
			t.event(e)
		}
	}
	return t
}

func (t *TraceWriter) event(e traceEvent) {
	if t.err != nil {
		return
	}
	b, err := json.Marshal(e)
	if err != nil {
		t.err = err
		return
	}
	if !t.first {
		t.w.WriteByte(',')
	}
	t.first = false
	t.w.WriteByte('\n')
	_, t.err = t.w.Write(b)
}

// Add writes rank's spans and flushes them to the underlying writer.
func (t *TraceWriter) Add(rank int, spans []Span) error {
	for _, sp := range spans {
		t.event(spanEvent(rank, sp))
	}
	if t.err == nil {
		t.err = t.w.Flush()
	}
	return t.err
}

// Close writes the end of the trace (it does not close the underlying
// writer) and returns the first error of any write.
func (t *TraceWriter) Close() error {
	if t.err == nil {
		t.w.WriteString("\n],\"displayTimeUnit\":\"ms\"}\n")
		t.err = t.w.Flush()
	}
	return t.err
}

// ReadTrace reads back a trace that WriteTrace or a TraceWriter wrote: the
// spans of every rank, in file order, in seconds.
func ReadTrace(r io.Reader) (*Timeline, error) {
	var doc struct {
		TraceEvents []traceEvent `json:"traceEvents"`
	}
	if err := json.NewDecoder(r).Decode(&doc); err != nil {
		return nil, fmt.Errorf("trace: %w", err)
	}
	tl := &Timeline{}
	for i, e := range doc.TraceEvents {
		if e.Pid < 0 || e.Pid >= MaxIndex {
			return nil, fmt.Errorf("trace event %d: process %d out of range", i, e.Pid)
		}
		for len(tl.Ranks) <= e.Pid {
			tl.Ranks = append(tl.Ranks, nil)
		}
		if e.Ph != "X" {
			continue
		}
		a, err := parseAction(e.Name, 1, 1)
		if err != nil {
			return nil, fmt.Errorf("trace event %d: %w", i, err)
		}
		tl.Ranks[e.Pid] = append(tl.Ranks[e.Pid], Span{Action: a, Start: e.Ts / 1e6, End: (e.Ts + e.Dur) / 1e6})
	}
	return tl, nil
}
