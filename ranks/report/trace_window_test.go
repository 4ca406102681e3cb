package report

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pplaunch/pplaunch/schedules"
)

// TestTraceSteps: --trace-steps takes last, all, N or A-B (from 1), and the
// window cuts a range to the steps the trace holds, saying so.
func TestTraceSteps(t *testing.T) {
	for _, c := range []struct {
		spec         string
		first, count int
		lo, hi       int
		note, err    string
	}{
		{"last", 0, 30, 29, 30, "", ""},
		{"", 0, 30, 29, 30, "", ""},
		{"all", 0, 30, 0, 30, "", ""},
		{"5", 0, 30, 4, 5, "", ""},
		{"3-6", 0, 30, 2, 6, "", ""},
		{"3-6", 4, 10, 0, 2, " (of 3-6 asked; the trace holds 5..14)", ""}, // resumed after step 4
		{"28-40", 0, 30, 27, 30, " (of 28-40 asked; the trace holds 1..30)", ""},
		{"31-40", 0, 30, 0, 0, "", "--trace-steps 31-40: the run's trace holds steps 1..30"},
		{"0", 0, 30, 0, 0, "", `--trace-steps "0": want last, all, a step N or a range A-B`},
		{"6-3", 0, 30, 0, 0, "", `--trace-steps "6-3"`},
		{"x", 0, 30, 0, 0, "", `--trace-steps "x"`},
	} {
		w, err := ParseTraceSteps(c.spec)
		var lo, hi int
		var note string
		if err == nil {
			lo, hi, note, err = w.window(c.first, c.count)
		}
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%q: %v, want %q", c.spec, err, c.err)
			}
			continue
		}
		if err != nil || lo != c.lo || hi != c.hi || note != c.note {
			t.Errorf("%q first %d count %d: [%d,%d) %q %v, want [%d,%d) %q", c.spec, c.first, c.count, lo, hi, note, err, c.lo, c.hi, c.note)
		}
	}
}

// TestDrawTraceWindow: --trace-svg of a 5-step run (resumed after step 2,
// so the trace holds steps 3..7) draws only the chosen steps, with their
// names at the boundaries and the title saying which, beside the expected
// timeline; by default the last step alone.
func TestDrawTraceWindow(t *testing.T) {
	sched, err := schedules.Generate("1f1b", 2, 2, 0)
	if err != nil {
		t.Fatal(err)
	}
	one, err := schedules.Simulate(sched, schedules.Costs{Default: schedules.StageCost{F: 0.01, B: 0.02}})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	trace := filepath.Join(dir, "t.json")
	f, err := os.Create(trace)
	if err != nil {
		t.Fatal(err)
	}
	tw := schedules.NewTraceWriter(f, 2)
	for k := range 5 {
		tl := &schedules.Timeline{Ranks: make([][]schedules.Span, 2)}
		for r, spans := range one.Ranks {
			for _, sp := range spans {
				sp.Start, sp.End = sp.Start+float64(k), sp.End+float64(k)
				tl.Ranks[r] = append(tl.Ranks[r], sp)
			}
		}
		if err := tw.Add(tl); err != nil {
			t.Fatal(err)
		}
	}
	if err := errors.Join(tw.Close(), f.Close()); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		spec, title string
		steps       []string
	}{
		{"last", "m · step 7 of 7", []string{"step 7"}},
		{"4-5", "m · steps 4..5 of 7", []string{"step 4", "step 5"}},
		{"6-9", "m · steps 6..7 of 7 (of 6-9 asked; the trace holds 3..7)", []string{"step 6", "step 7"}},
	} {
		win, err := ParseTraceSteps(c.spec)
		if err != nil {
			t.Fatal(err)
		}
		svg := filepath.Join(dir, "t.svg")
		if err := drawTrace(trace, svg, "m", sched, win, 2); err != nil {
			t.Fatalf("%s: %v", c.spec, err)
		}
		b := readFile(t, svg)
		if !strings.Contains(b, c.title) {
			t.Errorf("%s: title is not %q", c.spec, c.title)
		}
		if got := strings.Count(b, `class="step"`); got != len(c.steps) {
			t.Errorf("%s: %d step boundaries, want %d", c.spec, got, len(c.steps))
		}
		for _, s := range c.steps {
			if !strings.Contains(b, ">"+s+"<") {
				t.Errorf("%s: no %q", c.spec, s)
			}
		}
		perStep := len(one.Ranks[0]) + len(one.Ranks[1])
		if got := strings.Count(b, "<title>rank "); got != perStep*len(c.steps) {
			t.Errorf("%s: %d spans drawn, want %d", c.spec, got, perStep*len(c.steps))
		}
		if !strings.Contains(b, `class="expected"`) {
			t.Errorf("%s: no expected timeline", c.spec)
		}
	}
}
