package plan

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/pplaunch/pplaunch/schedules"
)

// The answers to a Query, printed as pplaunch plan prints them: the text
// form, one JSON object, or the report (report.go). The caller reads the
// files a query names (--from, --profile) and writes the files it asks for
// (Files); nothing here opens one.

// SimulateBuiltin simulates the built-in schedule q names with q's costs.
func (q *Query) SimulateBuiltin() (*Result, error) {
	return SimulateBuiltin(q.Schedule, q.Stages, q.Microbatches, q.Virtual, q.Costs(), q.ActBytes)
}

// SimulateFile simulates the schedule text that q.From holds with q's costs;
// its notes say what of a PyTorch CSV's actions pplaunch drops.
func (q *Query) SimulateFile(text string) (*Result, error) {
	s, err := schedules.Load(q.From, text)
	if err != nil {
		return nil, err
	}
	res, err := Simulate(q.From, s, q.Costs(), q.ActBytes)
	if err == nil {
		res.Notes = schedules.LoadNotes(q.From, text)
	}
	return res, err
}

// WriteSchedule prints one simulated schedule as q asks: its text form
// (--text), its summary as JSON (--json), or the report.
func (q *Query) WriteSchedule(w io.Writer, res *Result) error {
	if q.Text {
		_, err := io.WriteString(w, schedules.Format(res.Sched))
		return err
	}
	if q.JSON {
		return writeJSON(w, res)
	}
	return WriteResult(w, res, q.Costs())
}

// WriteCompare simulates every built-in schedule for q's P and M and prints
// them side by side (--compare).
func (q *Query) WriteCompare(w io.Writer) error {
	all, err := Compare(q.Stages, q.Microbatches, q.Virtual, q.Costs(), q.ActBytes)
	if err != nil {
		return fmt.Errorf("plan: %w", err)
	}
	if q.JSON {
		return writeJSON(w, struct {
			P         int       `json:"p"`
			M         int       `json:"m"`
			Schedules []*Result `json:"schedules"`
		}{q.Stages, q.Microbatches, all})
	}
	return WriteComparison(w, q.Stages, q.Microbatches, q.Costs(), all)
}

func writeJSON(w io.Writer, v any) error {
	return json.NewEncoder(w).Encode(v)
}
