package schedules

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// torchFile reads a CSV that torch wrote (testdata/torch/gen.py says how).
func torchFile(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "torch", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestLoadTorchWritten reads the CSVs torch 2.15 itself wrote, every action
// kind it writes among them (REDUCE_GRAD, WAIT_REDUCE_GRAD, UNSHARD,
// RESHARD, WAIT_SEND_F, WAIT_SEND_B, OVERLAP_F_B): each loads and
// validates, its text form is pinned, and the orders that pplaunch also
// generates are the generator's.
func TestLoadTorchWritten(t *testing.T) {
	for _, c := range []struct {
		file, same string // same: the built-in whose compute order torch's equals
	}{
		{"torch215_gpipe_p2_m4.csv", "gpipe"},
		{"torch215_interleaved1f1b_p2_m4.csv", ""},
		{"torch215_interleaved1f1b_p2_m4.compute_comms.csv", ""},
		{"torch215_interleavedzb_p2_m4.compute_comms.csv", ""},
		{"torch215_zbv_p2_m4.compute_comms.csv", ""},
		{"torch215_dualpipev_p2_m4.compute_comms.csv", "dualpipev"},
	} {
		s, err := Load(c.file, torchFile(t, c.file))
		if err != nil {
			t.Fatalf("%s: %v", c.file, err)
		}
		golden(t, filepath.Join("torch", strings.TrimSuffix(c.file, ".csv")+".txt"), Format(s))
		if c.same != "" {
			want, err := GenerateCompute(c.same, s.P, s.M, 0)
			if err != nil {
				t.Fatal(err)
			}
			if got := computeOnly(s); !reflect.DeepEqual(got, want.Ranks) {
				t.Errorf("%s: compute order\n%v\nwant %s's\n%v", c.file, got, c.same, want.Ranks)
			}
		}
	}
}

func computeOnly(s *Schedule) [][]Action {
	out := make([][]Action, len(s.Ranks))
	for r, l := range s.Ranks {
		for _, a := range l {
			if a.Kind.IsCompute() {
				out[r] = append(out[r], a)
			}
		}
	}
	return out
}

// TestTorchNotes: what pplaunch drops from torch's file is said, one line
// per group of kinds with how many actions it held; a file with none has no
// notes, and the text form never has any.
func TestTorchNotes(t *testing.T) {
	got := LoadNotes("x.csv", torchFile(t, "torch215_zbv_p2_m4.compute_comms.csv"))
	want := []string{
		"REDUCE_GRAD, WAIT_REDUCE_GRAD (8 actions): taken as pplaunch's data-parallel gradient exchange (--dp), which starts after each stage's last backward and completes before the optimizer step",
		"RESHARD, UNSHARD (8 actions): FSDP's, dropped: pplaunch keeps every stage's parameters whole",
		"WAIT_SEND_B, WAIT_SEND_F (16 actions): dropped: every send completes within the step",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("notes\n%q\nwant\n%q", got, want)
	}
	if n := LoadNotes("x.csv", torchFile(t, "torch215_interleaved1f1b_p2_m4.csv")); n != nil {
		t.Errorf("a file without dropped kinds: notes %q", n)
	}
	if n := LoadNotes("x.txt", "0F0,0REDUCE_GRAD\n"); n != nil {
		t.Errorf("text form: notes %q", n)
	}
}

// TestTorch1F1BOffByOne: torch 2.15's Schedule1F1B writes its last rank's
// forwards as micro-batches 1..M: the file is refused naming the stage, the
// missing micro-batch and the one out of range, on two and four ranks.
func TestTorch1F1BOffByOne(t *testing.T) {
	for f, stage := range map[string]string{"torch215_1f1b_p2_m4.csv": "stage 1 (rank 1)", "torch215_1f1b_p4_m4.csv": "stage 3 (rank 3)"} {
		_, err := Load(f, torchFile(t, f))
		want := "every stage runs 4 forwards, so the file has 4 micro-batches (0..3), but " + stage +
			" has no forward of micro-batch 0 and runs micro-batch 4, out of range; torch 2.15's Schedule1F1B"
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v\nwant %q", f, err, want)
		}
	}
}

// TestTorchKindsRefused: kinds torch does not write stay refused, and a
// dropped kind needs its stage as torch writes it.
func TestTorchKindsRefused(t *testing.T) {
	for _, c := range []struct{ text, want string }{
		{"0F0,0B0,0WAIT_FOO\n", `unknown kind "WAIT_FOO"`},
		{"0F0,0B0,0REDUCE_GRAD_ALL\n", `unknown kind "REDUCE_GRAD_ALL"`},
		{"0F0,0B0,REDUCE_GRAD\n", "row 1 (rank 0)"},
	} {
		if _, err := ParseCSV(c.text); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("ParseCSV(%q) = %v, want %q", c.text, err, c.want)
		}
	}
}

// TestMicroRange is checkMicroRange's decisions: only a file whose stages
// agree on the number of forwards while one stage's numbers are off is
// refused here; other faults are left to Validate.
func TestMicroRange(t *testing.T) {
	for _, c := range []struct {
		text, want string
	}{
		{"0F0,0F1,0B0,0B1\n1F0,1F1,1B0,1B1", ""},
		{"0F0,0F1,0B0,0B1\n1F0,1F2,1B0,1B2", "stage 1 (rank 1) has no forward of micro-batch 1 and runs micro-batch 2, out of range"},
		{"0F0,0F1,0F2,0B0,0B1,0B2\n1F0,1F2,1B0,1B2", ""}, // counts differ: Validate's
		{"0F0,0F2,0B0,0B2\n1F0,1F2,1B0,1B2", "stage 0 (rank 0) has no forward of micro-batch 1 and runs micro-batch 2, out of range; stage 1 (rank 1) has no forward"},
	} {
		s, err := Parse(c.text)
		if err != nil {
			t.Fatal(err)
		}
		err = checkMicroRange(s)
		if (c.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%q: %v, want %q", c.text, err, c.want)
		}
	}
}
