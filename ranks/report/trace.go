package report

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
func (s *traceStream) finish(svg, title string, sched *schedules.Schedule, win TraceSteps, first int) error {
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

// drawTrace draws the trace file as svg (schedules.TraceView): with the
// run's schedule, the steps win chooses of the run's steps first+1.. that
// the file holds.
func drawTrace(trace, svg, title string, sched *schedules.Schedule, win TraceSteps, first int) error {
	in, err := os.Open(trace)
	if err != nil {
		return err
	}
	defer in.Close()
	tl, err := schedules.ReadTrace(in)
	if err != nil {
		return err
	}
	pick := func(count int) (int, int, string, error) { return win.window(first, count) }
	tl, o, err := schedules.TraceView(tl, title, sched, first, pick)
	if err != nil {
		return err
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

func writeFile(path string, write func(io.Writer) error) error {
	if path == "" {
		return nil
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := write(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
