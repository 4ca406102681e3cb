package plan

import (
	"bytes"
	"fmt"

	"github.com/pplaunch/pplaunch/schedules"
)

// File is one file a query asks for: the flag that named it, its path and
// its contents.
type File struct {
	Flag, Path string
	Data       []byte
}

// Files renders the files q asks of res, in this order: the PyTorch CSV
// (--csv, with --csv-comms its transfers), the Gantt picture (--svg) and
// the Chrome trace (--trace). On an error it returns the files rendered
// before it, which the caller writes as it would have.
func (q *Query) Files(res *Result) ([]File, error) {
	var out []File
	if q.CSV != "" {
		out = append(out, File{"--csv", q.CSV, []byte(schedules.FormatCSV(res.Sched, q.CSVComms))})
	}
	if q.SVG == "" && q.Trace == "" {
		return out, nil
	}
	tl := timelineSeconds(res.Timeline)
	if q.SVG != "" {
		var b bytes.Buffer
		title := fmt.Sprintf("%s  P=%d v=%d M=%d  makespan %.4g ms  bubble %.1f%%", res.Schedule, res.P, res.V, res.M, res.Makespan, 100*res.Bubble)
		if err := schedules.WriteSVGWith(&b, tl, schedules.SVGOptions{Title: title, V: res.V, AxisFrom: "the step's start"}); err != nil {
			return out, err
		}
		out = append(out, File{"--svg", q.SVG, b.Bytes()})
	}
	if q.Trace != "" {
		var b bytes.Buffer
		if err := schedules.WriteTrace(&b, tl); err != nil {
			return out, err
		}
		out = append(out, File{"--trace", q.Trace, b.Bytes()})
	}
	return out, nil
}

// timelineSeconds is tl, whose times are plan's ms, in the seconds the
// picture and trace writers take.
func timelineSeconds(tl *schedules.Timeline) *schedules.Timeline {
	out := &schedules.Timeline{Ranks: make([][]schedules.Span, len(tl.Ranks))}
	for r, spans := range tl.Ranks {
		for _, sp := range spans {
			out.Ranks[r] = append(out.Ranks[r], schedules.Span{Action: sp.Action, Start: sp.Start / 1e3, End: sp.End / 1e3})
		}
	}
	return out
}
