package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/pplaunch/pplaunch/schedules"
)

// traceStream writes the measured timeline to --trace step by step, so that
// rank 0 never holds more than one step's spans. With --trace-svg alone it
// writes to a temporary file beside the picture; the picture, of the steps
// --trace-steps chooses, is drawn from the file at the end.
type traceStream struct {
	path string // the trace file being written
	temp bool   // path is a temporary file, removed at the end
	f    *os.File
	tw   *schedules.TraceWriter
	err  error // the first failed write, reported at the end
}

func openTraceStream(trace, svg string, world int) (*traceStream, error) {
	s := &traceStream{path: trace}
	var err error
	if trace != "" {
		s.f, err = os.Create(trace)
	} else {
		s.temp = true
		s.f, err = os.CreateTemp(filepath.Dir(svg), ".pplaunch-trace-*.json")
	}
	if err != nil {
		return nil, err
	}
	s.path = s.f.Name()
	s.tw = schedules.NewTraceWriter(s.f, world)
	return s, nil
}

// add writes one step's spans of every rank, with the flows from each send
// to its receive.
func (s *traceStream) add(tl *schedules.Timeline) {
	if err := s.tw.Add(tl); err != nil && s.err == nil {
		s.err = err
	}
}

// finish ends the trace and draws svg (if set) from it: the steps win
// chooses of the run's steps first+1.. (see drawTrace).
func (s *traceStream) finish(svg, title string, sched *schedules.Schedule, win traceSteps, first int) error {
	err := errors.Join(s.err, s.tw.Close(), s.f.Close())
	s.f = nil
	if err != nil {
		return fmt.Errorf("--trace: %w", err)
	}
	if svg != "" {
		if err := drawTrace(s.path, svg, title, sched, win, first); err != nil {
			return fmt.Errorf("--trace-svg: %w", err)
		}
	}
	s.close()
	return nil
}

// drawTrace draws the trace file as svg. With the run's schedule, it draws
// the steps win chooses (the run's steps first+1.. are in the file), marks
// where each begins, and lays beside them the timeline the simulator expects
// from each step's mean action times, so the actions that ran late stand
// out. A trace that cannot be cut into the schedule's steps (a failed run's
// last partial step) is drawn whole and alone.
func drawTrace(trace, svg, title string, sched *schedules.Schedule, win traceSteps, first int) error {
	in, err := os.Open(trace)
	if err != nil {
		return err
	}
	defer in.Close()
	tl, err := schedules.ReadTrace(in)
	if err != nil {
		return err
	}
	o := schedules.SVGOptions{Title: title}
	if sched != nil {
		o.V = sched.V
		if count, err := schedules.Steps(sched, tl); err == nil {
			lo, hi, note, err := win.window(first, count)
			if err != nil {
				return err
			}
			part, starts, err := schedules.Window(sched, tl, lo, hi)
			if err != nil {
				return err
			}
			tl = part
			for k, at := range starts {
				o.Steps = append(o.Steps, schedules.StepMark{At: at, Label: fmt.Sprintf("step %d", first+lo+k+1)})
			}
			o.AxisFrom = o.Steps[0].Label + "'s start"
			if hi-lo == 1 {
				o.Title += fmt.Sprintf(" · step %d of %d%s", first+lo+1, first+count, note)
			} else {
				o.Title += fmt.Sprintf(" · steps %d..%d of %d%s", first+lo+1, first+hi, first+count, note)
			}
			if exp, err := schedules.Expected(sched, tl); err == nil {
				o.Expected = exp
			}
		}
	}
	return writeFile(svg, func(w io.Writer) error { return schedules.WriteSVGWith(w, tl, o) })
}

// close releases the file and removes a temporary one. After a failed run
// it ends the trace first, so that the steps done so far open in a viewer.
func (s *traceStream) close() {
	if s.f != nil {
		s.tw.Close()
		s.f.Close()
		s.f = nil
	}
	if s.temp {
		os.Remove(s.path)
	}
}
