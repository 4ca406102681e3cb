package schedules

import "fmt"

// StepPicker chooses which of a trace's count whole steps to draw, as
// indices [lo, hi), with a note for the title ("" for none).
type StepPicker func(count int) (lo, hi int, note string, err error)

// TraceView is how a measured timeline tl of a run is drawn (WriteSVGWith).
// With the run's schedule s, it is the steps pick chooses (tl holds the run's
// steps first+1..), each step's start marked, beside the timeline the
// simulator expects from each step's mean action times, so the actions that
// ran late stand out. A timeline that cannot be cut into s's steps (a failed
// run's last partial step), or one without s, is drawn whole and alone.
func TraceView(tl *Timeline, title string, s *Schedule, first int, pick StepPicker) (*Timeline, SVGOptions, error) {
	o := SVGOptions{Title: title}
	if s == nil {
		return tl, o, nil
	}
	o.V = s.V
	count, err := Steps(s, tl)
	if err != nil {
		return tl, o, nil
	}
	lo, hi, note, err := pick(count)
	if err != nil {
		return nil, o, err
	}
	part, starts, err := Window(s, tl, lo, hi)
	if err != nil {
		return nil, o, err
	}
	for k, at := range starts {
		o.Steps = append(o.Steps, StepMark{At: at, Label: fmt.Sprintf("step %d", first+lo+k+1)})
	}
	o.AxisFrom = o.Steps[0].Label + "'s start"
	if hi-lo == 1 {
		o.Title += fmt.Sprintf(" · step %d of %d%s", first+lo+1, first+count, note)
	} else {
		o.Title += fmt.Sprintf(" · steps %d..%d of %d%s", first+lo+1, first+hi, first+count, note)
	}
	if exp, err := Expected(s, part); err == nil {
		o.Expected = exp
	}
	return part, o, nil
}
