package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pplaunch/pplaunch/plan"
)

// profileFile is a profile that train --profile wrote for a 4-block GPT
// (width 32, seq 16) on 2 ranks with 1F1B.
var profileFile = filepath.Join("..", "..", "plan", "testdata", "profile_gpt4.json")

func TestPlanProfileGolden(t *testing.T) {
	code, out, errOut := runPlan(t, "--profile", profileFile)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	planGolden(t, "plan_profile_cut.golden", out)
	code, out, errOut = runPlan(t, "--profile", profileFile, "--world", "8", "--memory-budget", "1MiB", "--top", "3")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	planGolden(t, "plan_profile_search.golden", out)
}

// TestPlanSearchCLI: --json prints the search's layouts; a budget that
// nothing fits fails, and says so; --zero 2 is refused.
func TestPlanSearchCLI(t *testing.T) {
	code, out, errOut := runPlan(t, "--profile", profileFile, "--world", "4", "--json")
	var got struct{ Layouts []plan.Row }
	if code != 0 || json.Unmarshal([]byte(out), &got) != nil || len(got.Layouts) == 0 {
		t.Errorf("--json: exit %d %s\n%s", code, errOut, out)
	}
	if code, _, errOut := runPlan(t, "--profile", profileFile, "--memory-budget", "1KiB"); code == 0 || !strings.Contains(errOut, "no layout fits the memory budget") {
		t.Errorf("a budget nothing fits: exit %d %s", code, errOut)
	}
	if code, _, errOut := runPlan(t, "--profile", profileFile, "--world", "8", "--zero", "2"); code == 0 || !strings.Contains(errOut, "pipelines allow only stage 0 (off) or 1") {
		t.Errorf("--zero 2: exit %d %s", code, errOut)
	}
}

// TestPlanProfileScheduleFile: a profile measured with a schedule file has
// no built-in schedule to predict the cut comparison with; plan says so.
func TestPlanProfileScheduleFile(t *testing.T) {
	p, err := readProfile(profileFile)
	if err != nil {
		t.Fatal(err)
	}
	p.Layout.Schedule = "mine.csv"
	path := filepath.Join(t.TempDir(), "p.json")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Write(f); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if code, _, errOut := runPlan(t, "--profile", path); code == 0 || !strings.Contains(errOut, "measured with the schedule file mine.csv") {
		t.Errorf("exit %d: %s", code, errOut)
	}
	if code, _, errOut := runPlan(t, "--profile", path, "--world", "2"); code != 0 {
		t.Errorf("a search from it: exit %d: %s", code, errOut)
	}
}

// TestPlanPrecision: plan --precision bf16 predicts an fp32 profile's
// layouts with half the activation bytes: without recomputation, the same
// layout's activation part of its memory halves; an unknown precision is
// refused.
func TestPlanPrecision(t *testing.T) {
	args := []string{"--profile", profileFile, "--world", "4", "--memory-budget", "1GiB", "--top", "100", "--json"}
	layouts := func(extra ...string) map[string]int64 {
		code, out, errOut := runPlan(t, append(args, extra...)...)
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		var res struct {
			Layouts []struct {
				PP, DP    int
				Micro     int `json:"microbatches"`
				Schedule  string
				Recompute bool
				Parts     struct{ Activations int64 } `json:"memory_parts"`
			} `json:"layouts"`
		}
		if err := json.Unmarshal([]byte(out), &res); err != nil {
			t.Fatalf("%v in %s", err, out)
		}
		m := map[string]int64{}
		for _, l := range res.Layouts {
			if l.Recompute { // a recomputing stage keeps its token ids, which stay 4 bytes
				continue
			}
			m[fmt.Sprintf("%s pp%d dp%d m%d rc=%v", l.Schedule, l.PP, l.DP, l.Micro, l.Recompute)] = l.Parts.Activations
		}
		return m
	}
	f32, bf16 := layouts(), layouts("--precision", "bf16")
	if len(f32) == 0 || len(f32) != len(bf16) {
		t.Fatalf("%d layouts in fp32, %d in bf16", len(f32), len(bf16))
	}
	for k, a := range f32 {
		if b := bf16[k]; a == 0 || b*2 > a+2 || b*2 < a-2 {
			t.Errorf("%s: activations %d bytes in fp32, %d in bf16: want half", k, a, b)
		}
	}
	if code, _, errOut := runPlan(t, "--profile", profileFile, "--precision", "fp8"); code == 0 || !strings.Contains(errOut, `--precision "fp8"`) {
		t.Errorf("--precision fp8: exit %d, %q", code, errOut)
	}
}
