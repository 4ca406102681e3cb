package ranks

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pplaunch/pplaunch/schedules"
)

// TestTrainScheduleFile: a schedule file (PyTorch's compute-only CSV with
// idle cells, an order no generator makes) trains to the bits of one
// process, as the generated schedules do; so does the same schedule in the
// text form with its transfers.
func TestTrainScheduleFile(t *testing.T) {
	ref := tiny(t)
	ref.CheckpointDir = t.TempDir()
	want, errs := trainRecorded(t, ref)
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	csv, err := os.ReadFile(filepath.Join("testdata", "torch_interleaved_p2_m4.csv"))
	if err != nil {
		t.Fatal(err)
	}
	s, err := schedules.Load("x.csv", string(csv))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []struct{ name, text string }{
		{"interleaved.csv", string(csv)},
		{"interleaved.sched", schedules.Format(s)},
	} {
		t.Run(f.name, func(t *testing.T) {
			cfg := tiny(t)
			cfg.PP, cfg.Schedule, cfg.ScheduleText = 2, f.name, f.text
			cfg.CheckpointDir = t.TempDir()
			got, errs := trainRecorded(t, cfg)
			if err := errors.Join(errs...); err != nil {
				t.Fatal(err)
			}
			if len(got) != len(want) {
				t.Fatalf("%d steps reported, one process %d", len(got), len(want))
			}
			for i := range want {
				if got[i].Loss != want[i].Loss {
					t.Errorf("step %d: loss %v, one process %v", i, got[i].Loss, want[i].Loss)
				}
			}
			sameParams(t, cfg.CheckpointDir, ref.CheckpointDir, "one process")
		})
	}
}

// TestPlanScheduleFile: a file that does not fit the run, or is not a valid
// schedule, is refused by Plan with what does not fit, in flag terms.
func TestPlanScheduleFile(t *testing.T) {
	csv, err := os.ReadFile(filepath.Join("testdata", "torch_interleaved_p2_m4.csv"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, text string
		pp, micro  int
		virtual    int
		want       string
	}{
		{"a.csv", string(csv), 2, 4, 0, ""},
		{"a.csv", string(csv), 2, 4, 2, ""},
		{"a.csv", string(csv), 4, 4, 0, "--schedule a.csv does not fit this run: the file has 2 ranks, the world has 4 pipeline ranks (--pp 4)"},
		{"a.csv", string(csv), 2, 8, 0, "the file has 4 micro-batches, the run 8 (--microbatches 8)"},
		{"a.csv", string(csv), 2, 4, 3, "the file has 2 stages per rank, the run asks for 3 (--virtual 3"},
		{"bad.sched", "0F0, 0B0, 0F1, 0B1\n1F1, 1B1, 1F0, 1B0\n", 2, 2, 0, "--schedule bad.sched: schedule deadlocks: 2 ranks blocked"},
		{"bad.csv", "0F0,0Q0\n", 1, 1, 0, `--schedule bad.csv: schedule CSV row 1 (rank 0): unknown kind "Q"`},
	} {
		cfg := tiny(t)
		cfg.Schedule, cfg.ScheduleText, cfg.PP, cfg.Micro, cfg.Virtual = c.name, c.text, c.pp, c.micro, c.virtual
		l, err := cfg.Plan(c.pp)
		switch {
		case c.want == "" && (err != nil || l.Sched == nil || l.Sched.Stages() != 4 || len(l.Cut) != 4):
			t.Errorf("%s on pp %d: %+v, %v", c.name, c.pp, l, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s on pp %d, %d micro-batches: %v, want %q", c.name, c.pp, c.micro, err, c.want)
		}
	}
}
