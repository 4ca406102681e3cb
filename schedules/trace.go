package schedules

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
)

// traceEvent is one Chrome trace event (the JSON format Perfetto and
// chrome://tracing open).
type traceEvent struct {
	Name string         `json:"name"`
	Cat  string         `json:"cat,omitempty"`
	Ph   string         `json:"ph"`
	Ts   float64        `json:"ts"`
	Dur  float64        `json:"dur,omitempty"`
	Pid  int            `json:"pid"`
	Tid  int            `json:"tid"`
	ID   string         `json:"id,omitempty"`
	BP   string         `json:"bp,omitempty"`
	Args map[string]any `json:"args,omitempty"`
}

// tracer turns timelines into trace events, one step after another: each
// rank is a process, its compute on thread 0, its transfers on threads 1,
// 2, ... (a transfer goes on the first of them that is free at its start,
// so that spans on a thread never overlap), and a flow arrow from each send
// to its receive (a flow start "s" at the start of the send's span, a flow
// end "f" bound to the receive's span, at the send's start or later), with
// an id unique in the trace.
type tracer struct {
	lanes []int // per rank, transfer threads named so far
	steps int   // timelines seen
}

func newTracer(ranks int) *tracer { return &tracer{lanes: make([]int, ranks)} }

// names are the metadata events that name rank r's process and threads.
func (t *tracer) names(r int) []traceEvent {
	for len(t.lanes) <= r {
		t.lanes = append(t.lanes, 0)
	}
	t.lanes[r] = 1
	return []traceEvent{
		{Name: "process_name", Ph: "M", Pid: r, Args: map[string]any{"name": fmt.Sprintf("rank %d", r)}},
		{Name: "thread_name", Ph: "M", Pid: r, Tid: 0, Args: map[string]any{"name": "compute"}},
		{Name: "thread_name", Ph: "M", Pid: r, Tid: 1, Args: map[string]any{"name": "transfers"}},
	}
}

// step returns the events of one timeline.
func (t *tracer) step(tl *Timeline) []traceEvent {
	step := t.steps
	t.steps++
	type at struct{ rank, tid int }
	var ev []traceEvent
	where := map[Action]at{} // transfers of this step -> where they were put
	spans := map[Action]Span{}
	for r, list := range tl.Ranks {
		var free []float64 // per transfer thread, when its last span ends
		for _, sp := range list {
			e := spanEvent(r, sp)
			if sp.Action.Kind.IsTransfer() {
				lane := 0
				for lane < len(free) && free[lane] > sp.Start {
					lane++
				}
				if lane == len(free) {
					free = append(free, 0)
				}
				free[lane] = sp.End
				e.Tid = 1 + lane
				if r < len(t.lanes) && e.Tid > t.lanes[r] {
					t.lanes[r] = e.Tid
					ev = append(ev, traceEvent{Name: "thread_name", Ph: "M", Pid: r, Tid: e.Tid, Args: map[string]any{"name": fmt.Sprintf("transfers %d", e.Tid)}})
				}
				where[sp.Action] = at{r, e.Tid}
				spans[sp.Action] = sp
			}
			ev = append(ev, e)
		}
	}
	for r, list := range tl.Ranks {
		for _, sp := range list {
			a := sp.Action
			if a.Kind != SendF && a.Kind != SendB {
				continue
			}
			m, _ := a.Matching()
			to, ok := where[m]
			if !ok {
				continue
			}
			recv := spans[m]
			id := fmt.Sprintf("%d:%v", step, a)
			name := fmt.Sprintf("%v→%v", a, m)
			from := where[a]
			ev = append(ev,
				traceEvent{Name: name, Cat: "flow", Ph: "s", Ts: sp.Start * 1e6, Pid: r, Tid: from.tid, ID: id},
				traceEvent{Name: name, Cat: "flow", Ph: "f", BP: "e", Ts: min(max(sp.Start, recv.Start), recv.End) * 1e6, Pid: to.rank, Tid: to.tid, ID: id})
		}
	}
	return ev
}

// spanEvent is span sp of rank r as a complete event, in microseconds.
func spanEvent(r int, sp Span) traceEvent {
	a := sp.Action
	e := traceEvent{Name: a.String(), Cat: "compute", Ph: "X", Ts: sp.Start * 1e6, Dur: (sp.End - sp.Start) * 1e6, Pid: r,
		Args: map[string]any{"kind": a.Kind.String(), "stage": a.Stage, "micro": a.Micro}}
	if a.Kind.IsTransfer() {
		e.Cat, e.Tid = "transfer", 1
	}
	return e
}

// WriteTrace writes tl as Chrome trace JSON (see tracer), times in
// microseconds.
func WriteTrace(w io.Writer, tl *Timeline) error {
	t := newTracer(len(tl.Ranks))
	var ev []traceEvent
	for r := range tl.Ranks {
		ev = append(ev, t.names(r)...)
	}
	ev = append(ev, t.step(tl)...)
	enc := json.NewEncoder(w)
	return enc.Encode(struct {
		TraceEvents     []traceEvent `json:"traceEvents"`
		DisplayTimeUnit string       `json:"displayTimeUnit"`
	}{ev, "ms"})
}

// TraceWriter writes Chrome trace JSON (as WriteTrace) as the steps come,
// so that a long run's timeline never has to be held in memory: the opening
// and the ranks' names first, then the events of each Add, then the
// closing.
type TraceWriter struct {
	w     *bufio.Writer
	t     *tracer
	first bool
	err   error
}

// NewTraceWriter starts a trace of ranks ranks on w.
func NewTraceWriter(w io.Writer, ranks int) *TraceWriter {
	t := &TraceWriter{w: bufio.NewWriter(w), t: newTracer(ranks), first: true}
	t.w.WriteString(`{"traceEvents":[`)
	for r := range ranks {
		for _, e := range t.t.names(r) {
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

// Add writes one step's timeline, every rank's spans and the flows between
// them, and flushes it to the underlying writer.
func (t *TraceWriter) Add(tl *Timeline) error {
	for _, e := range t.t.step(tl) {
		t.event(e)
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
