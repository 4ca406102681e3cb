package report

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"

	"github.com/pplaunch/pplaunch/ranks/live"
)

// liveHistory is rank 0's copy of the live view's curve in the agent's run
// directory, a JSON line a step: a restarted group's rank 0 reads it back, so
// its view (and a page opened after the restart) holds the whole run.
type liveHistory struct{ f *os.File }

// openLiveHistory seeds b with what an earlier attempt kept beside the
// progress file progress and goes on appending to it; nil without an agent
// (no run directory) or where the file cannot be written.
func openLiveHistory(progress string, b *live.Board) *liveHistory {
	if progress == "" {
		return nil
	}
	path := filepath.Join(filepath.Dir(progress), "live-series.jsonl")
	if data, err := os.ReadFile(path); err == nil {
		var pts []live.Point
		for _, line := range bytes.Split(data, []byte("\n")) {
			var p live.Point
			if json.Unmarshal(line, &p) == nil && p.Step > 0 { // a line cut by a kill is left out
				pts = append(pts, p)
			}
		}
		b.Seed(pts)
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil
	}
	return &liveHistory{f}
}

func (h *liveHistory) add(p live.Point) {
	if h != nil {
		b, _ := json.Marshal(p) // numbers and strings always marshal
		h.f.Write(append(b, '\n'))
	}
}

func (h *liveHistory) close() {
	if h != nil {
		h.f.Close()
	}
}
