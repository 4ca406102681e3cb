package report

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pplaunch/pplaunch/ranks"
)

// TestStepLines: plain output has a line per step; on a terminal, a
// progress bar line every twentieth of the run, at evaluations and at the ends.
func TestStepLines(t *testing.T) {
	for _, tc := range []struct {
		tty   bool
		lines int
	}{{false, 40}, {true, 22}} { // 22: the first step, every other step (20), the evaluation
		var buf strings.Builder
		r := &Run{cfg: Config{Train: ranks.TrainConfig{Steps: 40}, Out: &buf, TTY: tc.tty}, start: time.Now()}
		val := 2.5
		for step := range 40 {
			rec := ranks.StepRecord{Step: step + 1, Loss: 3, PeakActivation: []int64{1 << 20}}
			if step+1 == 31 { // an evaluation between two bar updates
				rec.ValLoss = &val
			}
			r.Step(rec)
		}
		got := strings.Split(strings.TrimSpace(buf.String()), "\n")
		if len(got) != tc.lines {
			t.Errorf("tty=%v: %d lines, want %d:\n%s", tc.tty, len(got), tc.lines, buf.String())
		}
		if tc.tty && (!strings.HasPrefix(got[len(got)-1], "[####################] 100%") || !strings.Contains(buf.String(), "val 2.5000")) {
			t.Errorf("progress bar lines:\n%s", buf.String())
		}
	}
}

// TestStepLineText: a step's line and its bar, as the docs show them.
func TestStepLineText(t *testing.T) {
	val := 2.25
	for _, tc := range []struct {
		rec   ranks.StepRecord
		steps int
		want  string
	}{
		{ranks.StepRecord{Step: 3, Loss: 4.56789, TokensPerS: 1234.4, StepS: 0.1234, BubbleMeasured: 0.25, BubblePredicted: 0.2, PeakActivation: []int64{1 << 20, 3 << 19}}, 10,
			"step 3/10  loss 4.5679  1234 tok/s  0.123s  bubble 25.0% (sim 20.0%)  peak act MiB [1.0 1.5]"},
		{ranks.StepRecord{Step: 10, Loss: 2, ValLoss: &val, PeakActivation: []int64{0}, PeakDevice: []int64{5 << 20}}, 10,
			"step 10/10  loss 2.0000  val 2.2500  0 tok/s  0.000s  bubble 0.0% (sim 0.0%)  peak act MiB [0.0]  device MiB [5.0]"},
	} {
		if got := stepLine(tc.rec, tc.steps); got != tc.want {
			t.Errorf("stepLine:\n got %q\nwant %q", got, tc.want)
		}
	}
	for _, tc := range []struct {
		step  int
		ok    bool
		want  string
		spent time.Duration
	}{
		{1, true, "[....................]   2%  ETA 1m38s ", 2 * time.Second},
		{2, false, "", 4 * time.Second}, // the same twentieth as step 1
		{25, true, "[##########..........]  50%  ETA 25s   ", 25 * time.Second},
		{50, true, "[####################] 100%  ETA 0s    ", 50 * time.Second},
	} {
		bar, ok := progressBar(ranks.StepRecord{Step: tc.step}, 50, tc.spent)
		if bar != tc.want || ok != tc.ok {
			t.Errorf("step %d: bar %q %v, want %q %v", tc.step, bar, ok, tc.want, tc.ok)
		}
	}
}

// TestMetricsWriteError: a --metrics file that cannot be written is an
// error at the end of the run naming --metrics, not a silently short file.
func TestMetricsWriteError(t *testing.T) {
	path := filepath.Join(t.TempDir(), "metrics.jsonl")
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path) // read-only: every write fails
	if err != nil {
		t.Fatal(err)
	}
	var buf strings.Builder
	r := &Run{cfg: Config{Train: ranks.TrainConfig{Steps: 1}, Out: &buf}, lines: &jsonLines{f: f, enc: json.NewEncoder(f)}}
	r.Step(ranks.StepRecord{Loss: 3, PeakActivation: []int64{1}})
	err = r.Finish(&ranks.Result{Steps: 1}, nil)
	if err == nil || !strings.Contains(err.Error(), "--metrics") {
		t.Errorf("Finish: %v, want a --metrics write error", err)
	}
}
