package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/pplaunch/pplaunch/models"
	"github.com/pplaunch/pplaunch/ranks"
	"github.com/pplaunch/pplaunch/schedules"
)

// profileFile is a profile that train --profile wrote for a 4-block GPT
// (width 32, seq 16) on 2 ranks with 1F1B.
var profileFile = filepath.Join("testdata", "profile_gpt4.json")

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

// TestSearch: every layout of the space is predicted once; those that fit
// the budget come first, fastest first, and a layout fits exactly when its
// largest rank's memory is within the budget; every schedule is searched;
// each row is ranks.Predict's.
func TestSearch(t *testing.T) {
	p, err := readProfile(profileFile)
	if err != nil {
		t.Fatal(err)
	}
	const budget = 1 << 20
	rows, err := search(p, 8, 32, budget, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != len(searchSpace(p, 8, 32)) {
		t.Fatalf("%d rows for %d layouts", len(rows), len(searchSpace(p, 8, 32)))
	}
	names := map[string]bool{}
	for i, r := range rows {
		names[r.Schedule] = true
		if r.Fits != (r.MemoryBytes <= budget) {
			t.Errorf("%+v: fits %v with %d bytes of %d", r, r.Fits, r.MemoryBytes, budget)
		}
		if i > 0 && rows[i-1].Fits == r.Fits && rows[i-1].StepS > r.StepS {
			t.Errorf("row %d is faster than row %d", i, i-1)
		}
		if i > 0 && !rows[i-1].Fits && r.Fits {
			t.Errorf("row %d fits after one that does not", i)
		}
		if r.PP*r.DP != 8 || r.DP*r.Micro*r.MicroSize != 32 || !strings.HasPrefix(r.Why, map[bool]string{true: "kept", false: "rejected"}[r.Fits]) {
			t.Errorf("row %+v", r)
		}
	}
	for _, n := range schedules.Names {
		if !names[n] {
			t.Errorf("schedule %s was not searched", n)
		}
	}
	r := rows[0]
	pr, err := ranks.Predict(p, ranks.Candidate{PP: r.PP, DP: r.DP, Schedule: r.Schedule, Virtual: r.V, Micro: r.Micro, MicroSize: r.MicroSize, Recompute: r.Recompute})
	if err != nil || pr.StepS != r.StepS || slices.Max(pr.Memory) != r.MemoryBytes {
		t.Errorf("row %+v is not Predict's %+v (%v)", r, pr, err)
	}
	code, out, errOut := runPlan(t, "--profile", profileFile, "--world", "4", "--json")
	var got struct{ Layouts []searchRow }
	if code != 0 || json.Unmarshal([]byte(out), &got) != nil || len(got.Layouts) == 0 {
		t.Errorf("--json: exit %d %s\n%s", code, errOut, out)
	}
	if code, _, errOut := runPlan(t, "--profile", profileFile, "--memory-budget", "1KiB"); code == 0 || !strings.Contains(errOut, "no layout fits the memory budget") {
		t.Errorf("a budget nothing fits: exit %d %s", code, errOut)
	}
}

// TestSearchZero: under --zero 1 every layout's optimizer memory is its
// share of the replicas' (less wherever dp > 1, the same on one replica),
// so more layouts fit; a layout rejected without it says when it would fit
// with it; --zero 2 is refused.
func TestSearchZero(t *testing.T) {
	p, err := readProfile(profileFile)
	if err != nil {
		t.Fatal(err)
	}
	const budget = 1 << 20
	key := func(r searchRow) string {
		return fmt.Sprint(r.PP, r.DP, r.Schedule, r.V, r.Micro, r.MicroSize, r.Recompute)
	}
	count := func(rows []searchRow) (fits int, by map[string]searchRow) {
		by = map[string]searchRow{}
		for _, r := range rows {
			by[key(r)] = r
			if r.Fits {
				fits++
			}
		}
		return fits, by
	}
	plain, err := search(p, 8, 32, budget, 0)
	if err != nil {
		t.Fatal(err)
	}
	zero, err := search(p, 8, 32, budget, 1)
	if err != nil {
		t.Fatal(err)
	}
	nPlain, byPlain := count(plain)
	nZero, _ := count(zero)
	if nZero <= nPlain {
		t.Errorf("%d layouts fit with --zero 1, %d without", nZero, nPlain)
	}
	hinted := 0
	for _, z := range zero {
		r := byPlain[key(z)]
		switch {
		case z.Zero != 1 || r.Zero != 0:
			t.Errorf("%s: zero %d and %d", key(z), z.Zero, r.Zero)
		case z.DP > 1 && z.MemoryBytes >= r.MemoryBytes:
			t.Errorf("%s: %d bytes with --zero 1, %d without", key(z), z.MemoryBytes, r.MemoryBytes)
		case z.DP == 1 && z.MemoryBytes != r.MemoryBytes:
			t.Errorf("%s on one replica: %d bytes with --zero 1, %d without", key(z), z.MemoryBytes, r.MemoryBytes)
		}
		if want := !r.Fits && z.Fits; want != strings.Contains(r.Why, "fits with --zero 1") {
			t.Errorf("%s: verdict %q, fits with --zero 1: %v", key(z), r.Why, z.Fits)
		} else if want {
			hinted++
		}
	}
	if hinted == 0 {
		t.Error("no rejected layout says it fits with --zero 1")
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

func TestParseBytes(t *testing.T) {
	for _, c := range []struct {
		in   string
		want int64
	}{{"12GiB", 12 << 30}, {"512MiB", 512 << 20}, {"1.5GB", 1500000000}, {"1000", 1000}, {"2 KiB", 2048}, {"0", 0}, {"-1GiB", 0}, {"lots", 0}} {
		got, err := parseBytes(c.in)
		if got != c.want || (c.want == 0) != (err != nil) {
			t.Errorf("parseBytes(%q) = %d, %v; want %d", c.in, got, err, c.want)
		}
	}
}

// TestBalanceProfile: --balance profile:FILE cuts by the profile's block
// times, and refuses a profile of another model.
func TestBalanceProfile(t *testing.T) {
	p, err := readProfile(profileFile)
	if err != nil {
		t.Fatal(err)
	}
	cfg := models.Config{Kind: "gpt", Vocab: 256, Layers: 4, Width: 32, Heads: 2, Seq: 16}
	f := cutFlags{Balance: "profile:" + profileFile}
	got, err := f.cut(cfg, 3)
	want, _ := ranks.ProfileCut(p, 3)
	if err != nil || !slices.Equal(got, want) || len(got) != 3 {
		t.Errorf("cut %v, %v; want %v", got, err, want)
	}
	cfg.Width = 64
	if _, err := f.cut(cfg, 2); err == nil || !strings.Contains(err.Error(), "profile this model first") {
		t.Errorf("another model's profile: %v", err)
	}
	f.Balance = "profile:" + filepath.Join(t.TempDir(), "none.json")
	if _, err := f.cut(cfg, 2); err == nil || !strings.Contains(err.Error(), "--balance profile:") {
		t.Errorf("a missing profile: %v", err)
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
