package report

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pplaunch/pplaunch/ranks"
	"github.com/pplaunch/pplaunch/schedules"
)

// TestRunStreamsTrace: rank 0's reporting keeps no step's timeline.
// After every step the trace file already holds all spans reported so far
// (so the reporter holds none of them: each step's timeline is cleared once
// reported, and the file still has its spans); at the end the file is a
// trace with every span, and the picture is drawn from it. With --trace-svg
// alone, no trace file is left behind.
func TestRunStreamsTrace(t *testing.T) {
	for _, withTrace := range []bool{true, false} {
		dir := t.TempDir()
		const world, steps, perRank = 3, 40, 4
		var buf strings.Builder
		c := Config{Train: ranks.TrainConfig{Steps: steps, Schedule: "1f1b"}, World: world, Compute: "cpu", Out: &buf, TraceSVG: filepath.Join(dir, "t.svg")}
		if withTrace {
			c.Trace = filepath.Join(dir, "t.json")
		}
		o, err := Open(c)
		if err != nil {
			t.Fatal(err)
		}
		var sum ranks.Summary
		for step := range steps {
			tl := &schedules.Timeline{Ranks: make([][]schedules.Span, world)}
			for r := range world {
				for i := range perRank {
					t0 := float64(step) + float64(i)/10
					tl.Ranks[r] = append(tl.Ranks[r], schedules.Span{Action: schedules.Action{Kind: schedules.F, Stage: r, Micro: i}, Start: t0, End: t0 + 0.05})
				}
			}
			rec := ranks.StepRecord{Step: step, Loss: 3, PeakActivation: make([]int64, world), PeakMicroBatches: make([]float64, world), Timeline: tl}
			o.Step(rec)
			sum.Add(rec)
			for r := range tl.Ranks {
				clear(tl.Ranks[r]) // whatever the reporter kept of it is now zero
			}
			if got, want := strings.Count(readFile(t, o.trace.path), `"ph":"X"`), (step+1)*world*perRank; got != want {
				t.Fatalf("after step %d the trace file holds %d spans, want %d", step, got, want)
			}
		}
		tracePath := o.trace.path
		if err := o.Finish(&ranks.Result{Steps: steps, Summary: sum}, nil); err != nil {
			t.Fatal(err)
		}
		o.Close()
		if withTrace {
			f, err := os.Open(c.Trace)
			if err != nil {
				t.Fatal(err)
			}
			tl, err := schedules.ReadTrace(f)
			f.Close()
			if err != nil {
				t.Fatal(err)
			}
			for r, spans := range tl.Ranks {
				if len(spans) != steps*perRank || spans[len(spans)-1].Start != float64(steps-1)+0.3 {
					t.Errorf("rank %d: %d spans read back, last %+v", r, len(spans), spans[len(spans)-1])
				}
			}
		} else if _, err := os.Stat(tracePath); !os.IsNotExist(err) {
			t.Errorf("temporary trace %s left behind: %v", tracePath, err)
		}
		if b, err := os.ReadFile(c.TraceSVG); err != nil || !bytes.Contains(b, []byte("<svg")) || !bytes.Contains(b, []byte("2F3")) {
			t.Errorf("svg: %v", err)
		}
		if !strings.Contains(buf.String(), "summary: steps 1..40") {
			t.Errorf("no summary:\n%s", buf.String())
		}
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestRunTraceAfterFailure: a run that stops with an error (close
// without finish) leaves a trace of the steps done that is still valid.
func TestRunTraceAfterFailure(t *testing.T) {
	var buf strings.Builder
	c := Config{Train: ranks.TrainConfig{Steps: 5, Schedule: "1f1b"}, World: 1, Compute: "cpu", Out: &buf, Trace: filepath.Join(t.TempDir(), "t.json")}
	o, err := Open(c)
	if err != nil {
		t.Fatal(err)
	}
	tl := &schedules.Timeline{Ranks: [][]schedules.Span{{{Action: schedules.Action{Kind: schedules.B}, Start: 1, End: 2}}}}
	o.Step(ranks.StepRecord{Loss: 3, PeakActivation: []int64{0}, Timeline: tl})
	o.Close()
	f, err := os.Open(c.Trace)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	back, err := schedules.ReadTrace(f)
	if err != nil || len(back.Ranks) != 1 || len(back.Ranks[0]) != 1 || back.Ranks[0][0].Action.Kind != schedules.B {
		t.Errorf("trace after a failed run: %+v, %v", back, err)
	}
}
