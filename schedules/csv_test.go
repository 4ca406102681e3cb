package schedules

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// TestCSVRoundTrip: every generated schedule written as PyTorch's CSV reads
// back unchanged with its transfers (compute_comms), and its compute-only
// CSV reads back as the generator's compute order.
func TestCSVRoundTrip(t *testing.T) {
	for _, name := range Names {
		for p := 1; p <= 4; p++ {
			for m := 1; m <= 8; m++ {
				v := vs(name)[0]
				s := generate(t, name, p, m, v)
				back, err := ParseCSV(FormatCSV(s, true))
				if err != nil || !reflect.DeepEqual(back, s) {
					t.Fatalf("%s P=%d M=%d: compute_comms round trip: %v", name, p, m, err)
				}
				c, err := GenerateCompute(name, p, m, v)
				if err != nil {
					t.Fatal(err)
				}
				back, err = ParseCSV(FormatCSV(s, false))
				if err != nil || !reflect.DeepEqual(back, c) {
					t.Fatalf("%s P=%d M=%d: compute_only CSV is not the compute order: %v", name, p, m, err)
				}
			}
		}
	}
}

// TestCSVWriteGolden pins the CSV pplaunch writes, both forms, for 1F1B on
// two ranks and DualPipeV on two ranks.
func TestCSVWriteGolden(t *testing.T) {
	for _, c := range []struct {
		name string
		p, m int
	}{{"1f1b", 2, 4}, {"dualpipev", 2, 4}} {
		s := generate(t, c.name, c.p, c.m, 0)
		golden(t, c.name+"_p2_m4.compute_only.csv", FormatCSV(s, false))
		golden(t, c.name+"_p2_m4.compute_comms.csv", FormatCSV(s, true))
	}
}

// TestLoadTorchCSV reads CSVs in the forms torch.distributed.pipelining
// writes: DualPipeV's rows with overlapped pairs (written by hand from
// PyTorch's ScheduleDualPipeV steps, so it must equal the generator's
// order), an interleaved compute-only file with empty cells for idle
// steps, and a compute_comms file with FSDP's UNSHARD/RESHARD and
// REDUCE_GRAD. Each loads, validates, and gives the golden text form.
func TestLoadTorchCSV(t *testing.T) {
	for _, f := range []string{"torch_dualpipev_p2_m4.csv", "torch_interleaved_p2_m4_compute_only.csv", "torch_1f1b_p2_m2_compute_comms.csv"} {
		b, err := os.ReadFile(filepath.Join("testdata", f))
		if err != nil {
			t.Fatal(err)
		}
		s, err := Load(f, string(b))
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		golden(t, strings.TrimSuffix(f, ".csv")+".txt", Format(s))
		if f == "torch_dualpipev_p2_m4.csv" {
			if want := generate(t, "dualpipev", 2, 4, 0); !reflect.DeepEqual(s, want) {
				t.Errorf("PyTorch's DualPipeV order differs from the generator's:\n%s\nwant\n%s", Format(s), Format(want))
			}
		}
		if f == "torch_1f1b_p2_m2_compute_comms.csv" {
			if want := generate(t, "1f1b", 2, 2, 0); !reflect.DeepEqual(s, want) {
				t.Errorf("compute_comms file was not taken as given:\n%s", Format(s))
			}
		}
	}
}

func TestParseCSVErrors(t *testing.T) {
	for _, c := range []struct{ text, want string }{
		{"0F0,0B0\n,,\n", "row 2 (rank 1) has no actions"},
		{"0F0,(0F1;0B0)OVERLAP,0B1\n", "row 1 (rank 0) cell 2: \"(0F1;0B0)OVERLAP\": want an overlapped pair"},
		{"0F0,0X0\n", `row 1 (rank 0): unknown kind "X"`},
		{"0F0,\"0B0#\"\n", "cell 2"},
		{"", "no rows"},
		{"0F0,\"0B0\n", "schedule CSV"},
	} {
		if _, err := ParseCSV(c.text); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("ParseCSV(%q) = %v, want %q", c.text, err, c.want)
		}
	}
}

func TestFit(t *testing.T) {
	s := generate(t, "zb-v", 3, 6, 0)
	if err := Fit(s, 3, 6, 0); err != nil {
		t.Error(err)
	}
	if err := Fit(s, 3, 6, 2); err != nil {
		t.Error(err)
	}
	err := Fit(s, 4, 8, 3)
	for _, w := range []string{
		"the file has 3 ranks, the world has 4 pipeline ranks (--pp 4)",
		"the file has 6 micro-batches, the run 8 (--microbatches 8)",
		"the file has 2 stages per rank, the run asks for 3 (--virtual 3",
	} {
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("Fit: %v, want %q", err, w)
		}
	}
}
