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
// writes to a temporary file beside the picture; the picture, which shows
// every step, is drawn from the file at the end.
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

// finish ends the trace and draws svg (if set) from it.
func (s *traceStream) finish(svg, title string, sched *schedules.Schedule) error {
	err := errors.Join(s.err, s.tw.Close(), s.f.Close())
	s.f = nil
	if err != nil {
		return fmt.Errorf("--trace: %w", err)
	}
	if svg != "" {
		if err := drawTrace(s.path, svg, title, sched); err != nil {
			return fmt.Errorf("--trace-svg: %w", err)
		}
	}
	s.close()
	return nil
}

// drawTrace draws the trace file as svg; with the run's schedule, beside the
// timeline the simulator expects from each step's mean action times, so the
// actions that ran late stand out (a trace that Expected cannot pair with the
// schedule, such as a failed run's last partial step, is drawn alone).
func drawTrace(trace, svg, title string, sched *schedules.Schedule) error {
	in, err := os.Open(trace)
	if err != nil {
		return err
	}
	defer in.Close()
	tl, err := schedules.ReadTrace(in)
	if err != nil {
		return err
	}
	if sched != nil {
		if exp, err := schedules.Expected(sched, tl); err == nil {
			return writeFile(svg, func(w io.Writer) error { return schedules.WriteSVGCompared(w, tl, exp, title) })
		}
	}
	return writeFile(svg, func(w io.Writer) error { return schedules.WriteSVG(w, tl, title) })
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
