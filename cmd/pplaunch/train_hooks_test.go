package main

import (
	"strings"
	"testing"

	"github.com/pplaunch/pplaunch/ranks"
)

func TestFaultHooks(t *testing.T) {
	for _, tc := range []struct {
		stall, kill string
		rank        int
		hook        bool
		err         string
	}{
		{"", "", 0, false, ""},
		{"1:2:1F3", "", 1, true, ""},
		{"1:2:1F3", "", 0, false, ""},
		{"", "2:3", 2, true, ""},
		{"1:2", "", 1, false, "want RANK:STEP:ACTION"},
		{"1:x:1F3", "", 1, false, "invalid syntax"},
		{"1:2:1F3,1B3", "", 1, false, "not one action"},
		{"1:2:bogus", "", 1, false, "not one action"},
		{"", "2", 2, false, "want RANK:STEP"},
	} {
		h, err := faultHooks(tc.stall, tc.kill, tc.rank, 0)
		switch {
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("faultHooks(%q, %q): %v, want an error with %q", tc.stall, tc.kill, err, tc.err)
		case tc.err == "" && err != nil:
			t.Errorf("faultHooks(%q, %q): %v", tc.stall, tc.kill, err)
		case tc.err == "" && (h != nil) != tc.hook:
			t.Errorf("faultHooks(%q, %q) for rank %d: hook %v, want %v", tc.stall, tc.kill, tc.rank, h != nil, tc.hook)
		}
	}
}

// FuzzParseFault: any spec parses or is refused, never panics.
func FuzzParseFault(f *testing.F) {
	for _, s := range []string{"1:2:1F3", "0:0:0SEND_F0", "2:3", "", ":", "1:2:", "-1:-2:3W4"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, spec string) {
		faultHooks(spec, spec, 0, 0)
	})
}

// TestTrainOutputLines: plain output has a line per step; on a terminal, a
// progress bar line every twentieth of the run, at evaluations and at the ends.
func TestTrainOutputLines(t *testing.T) {
	for _, tc := range []struct {
		tty   bool
		lines int
	}{{false, 40}, {true, 22}} { // 22: the first step, every other step (20), the evaluation
		var buf strings.Builder
		o := &trainOutput{cfg: ranks.TrainConfig{Steps: 40}, w: &buf, tty: tc.tty, c: &trainCmd{}}
		val := 2.5
		for step := range 40 {
			r := ranks.StepRecord{Step: step, Loss: 3, PeakActivation: []int64{1 << 20}}
			if step == 30 { // an evaluation between two bar updates
				r.ValLoss = &val
			}
			o.step(r)
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
