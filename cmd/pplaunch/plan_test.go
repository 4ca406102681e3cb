package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/pplaunch/pplaunch/schedules"
)

var updatePlan = flag.Bool("update", false, "rewrite the plan golden files in testdata")

// runPlan runs `pplaunch plan args...` in-process.
func runPlan(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var o, e bytes.Buffer
	code = run(append([]string{"plan"}, args...), &o, &e)
	return code, o.String(), e.String()
}

func planGolden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *updatePlan {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs (rerun with -update if intended)\ngot:\n%s\nwant:\n%s", path, got, want)
	}
}

func TestPlanCompareP8M16(t *testing.T) {
	code, out, errOut := runPlan(t, "--compare", "--stages", "8", "--microbatches", "16")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, name := range []string{"gpipe", "1f1b"} {
		if !strings.Contains(out, name) || !strings.Contains(out, "30.4%   30.4% (P-1)/(M+P-1)") {
			t.Errorf("%s row lacks the 30.4%% bubble:\n%s", name, out)
		}
	}
	planGolden(t, "plan_compare_p8_m16.golden", out)
}

func TestPlanSummaryGolden(t *testing.T) {
	code, out, errOut := runPlan(t, "--schedule", "zb-h1", "--stages", "4", "--microbatches", "6", "--act-bytes", "1000")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	planGolden(t, "plan_zbh1_p4_m6.golden", out)
}

func TestPlanJSON(t *testing.T) {
	code, out, errOut := runPlan(t, "--schedule", "1f1b", "--stages", "4", "--microbatches", "8", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var got struct {
		Makespan, Ideal, Bubble float64
		BubbleFormula           *float64  `json:"bubble_formula"`
		PeakActivations         []float64 `json:"peak_activations"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if strings.Count(strings.TrimSpace(out), "\n") != 0 {
		t.Errorf("--json printed more than one line:\n%s", out)
	}
	// Integer costs in ms: 36 idle ms over 4·33 rank-ms is 3/11, the same
	// rational as the formula, so the correctly rounded quotients are equal.
	if got.Makespan != 33 || got.Ideal != 24 || got.Bubble != 3.0/11 || got.BubbleFormula == nil || *got.BubbleFormula != 3.0/11 {
		t.Errorf("got %+v", got)
	}
	if want := []float64{4, 3, 2, 1}; !slices.Equal(got.PeakActivations, want) {
		t.Errorf("peak_activations %v, want %v", got.PeakActivations, want)
	}
}

func TestPlanFromFile(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := write("good.sched", "# 1F1B, compute only\n0F0, 0F1, 0B0, 0B1\n1F0, 1B0, 1F1, 1B1\n")
	code, out, errOut := runPlan(t, "--from", good, "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if !strings.Contains(out, `"p":2`) || !strings.Contains(out, `"m":2`) || strings.Contains(out, "bubble_formula") {
		t.Errorf("unexpected summary %s", out)
	}

	deadlock := write("deadlock.sched", `0F0, 0SEND_F0, 0F1, 0SEND_F1, 0RECV_B0, 0B0, 0RECV_B1, 0B1
1RECV_F0, 1F0, 1B0, 1SEND_B0, 1RECV_F1, 1F1, 1B1, 1SEND_B1
`)
	code, _, errOut = runPlan(t, "--from", deadlock)
	if code == 0 {
		t.Fatal("a deadlocking schedule exited 0")
	}
	for _, frag := range []string{"deadlock", "rank 0 step 3 0SEND_F1 waits for rank 1", "rank 1 step 3 1SEND_B0 waits for rank 0", "[0SEND_F1]"} {
		if !strings.Contains(errOut, frag) {
			t.Errorf("stderr lacks %q:\n%s", frag, errOut)
		}
	}

	noBackward := write("nob.sched", "0F0, 0F1, 0B0\n1F0, 1B0, 1F1, 1B1\n")
	code, _, errOut = runPlan(t, "--from", noBackward)
	if code == 0 || !strings.Contains(errOut, "rank 0 step 1 (0F1): no backward for stage 0 micro-batch 1") {
		t.Errorf("exit %d, stderr:\n%s", code, errOut)
	}

	syntax := write("syntax.sched", "0F0, 0B0\n1F0, 1Q0\n")
	code, _, errOut = runPlan(t, "--from", syntax)
	if code == 0 || !strings.Contains(errOut, "line 2 col 7: unknown kind \"Q\"") {
		t.Errorf("exit %d, stderr:\n%s", code, errOut)
	}
}

func TestPlanPictures(t *testing.T) {
	dir := t.TempDir()
	svg, trace := filepath.Join(dir, "g.svg"), filepath.Join(dir, "t.json")
	code, _, errOut := runPlan(t, "--schedule", "interleaved", "--virtual", "2", "--stages", "4", "--microbatches", "8", "--svg", svg, "--trace", trace)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	b, err := os.ReadFile(svg)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(b, []byte("<svg")) || !bytes.HasSuffix(b, []byte("</svg>\n")) || bytes.Count(b, []byte("<title>rank 0 0F")) != 8 {
		t.Errorf("svg does not look like the Gantt of 8 micro-batches:\n%.300s", b)
	}
	b, err = os.ReadFile(trace)
	if err != nil {
		t.Fatal(err)
	}
	var tr struct {
		TraceEvents []struct {
			Name string
			Ph   string
			Pid  int
			Ts   float64
			Dur  float64
		}
	}
	if err := json.Unmarshal(b, &tr); err != nil {
		t.Fatal(err)
	}
	var last float64
	computes := 0
	for _, e := range tr.TraceEvents {
		if e.Ph == "X" && !strings.Contains(e.Name, "_") {
			computes++
			last = max(last, e.Ts+e.Dur)
		}
	}
	// 4 ranks × 2 chunks × 8 micro-batches × (F, B); makespan 28.5 ms.
	if computes != 128 || last != 28500 {
		t.Errorf("trace has %d compute events ending at %v µs, want 128 ending at 28500", computes, last)
	}
	// Interleaved on 4 ranks: 7 boundaries between ranks × 8 micro-batches × 2 directions.
	checkTraceFlows(t, b, 7*8*2)
}

func TestPlanText(t *testing.T) {
	code, out, errOut := runPlan(t, "--schedule", "1f1b", "--stages", "3", "--microbatches", "4", "--text")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	s, err := schedules.Parse(out)
	if err != nil {
		t.Fatal(err)
	}
	if err := schedules.Validate(s); err != nil || s.P != 3 || s.M != 4 {
		t.Errorf("--text output: P=%d M=%d, %v", s.P, s.M, err)
	}
}

func TestPlanBadFlags(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--stages", "0"}, "P=0 ranks"},
		{[]string{"--microbatches", "-1"}, "M=-1"},
		{[]string{"--schedule", "interleaved", "--virtual", "1"}, "would be 1f1b: use --virtual 2 or more"},
		{[]string{"--schedule", "1f1b", "--virtual", "3"}, "1f1b has one stage per rank: drop --virtual"},
		{[]string{"--schedule", "zb-v", "--virtual", "3"}, "always has 2 stages per rank"},
		{[]string{"--from", "x.txt", "--virtual", "2"}, "--virtual 2 with --from"},
		{[]string{"--text", "--json"}, "--text prints only the schedule"},
		{[]string{"--schedule", "chimera"}, `unknown schedule "chimera"`},
		{[]string{"--tw", "3"}, "--tw 3 is more than --tb 2"},
		{[]string{"--tf", "-1"}, "--tf -1: times must be >= 0"},
		{[]string{"--compare", "--svg", "x.svg"}, "--compare prints a table"},
		{[]string{"--from", "/nonexistent/file"}, "/nonexistent/file"},
	} {
		code, _, errOut := runPlan(t, c.args...)
		if code == 0 || !strings.Contains(errOut, c.want) {
			t.Errorf("plan %v: exit %d, stderr %q, want non-zero and %q", c.args, code, errOut, c.want)
		}
	}
}

// TestPlanComparePeakForms: every schedule in --compare, the V schedules
// included, and where a paper gives the largest rank's peak, the simulated
// peak equals it.
func TestPlanComparePeakForms(t *testing.T) {
	for _, pm := range [][2]string{{"8", "16"}, {"6", "12"}, {"3", "7"}} {
		code, out, errOut := runPlan(t, "--compare", "--stages", pm[0], "--microbatches", pm[1], "--json")
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		var got struct {
			Schedules []struct {
				Schedule        string
				PeakActivations []float64 `json:"peak_activations"`
				PeakFormula     *float64  `json:"peak_formula"`
			}
		}
		if err := json.Unmarshal([]byte(out), &got); err != nil {
			t.Fatal(err)
		}
		var names []string
		forms := 0
		for _, s := range got.Schedules {
			names = append(names, s.Schedule)
			if s.PeakFormula == nil {
				continue
			}
			forms++
			if p := slices.Max(s.PeakActivations); p != *s.PeakFormula {
				t.Errorf("P=%s M=%s %s: simulated peak %v, closed form %v", pm[0], pm[1], s.Schedule, p, *s.PeakFormula)
			}
		}
		if !slices.Equal(names, schedules.Names) || forms < 4 {
			t.Errorf("P=%s M=%s: schedules %v with %d peak forms; want %v with the forms of gpipe, 1f1b, v-half, v-min", pm[0], pm[1], names, forms, schedules.Names)
		}
	}
}

// TestPlanCSV: --csv writes PyTorch's pipeline-order CSV (both forms, golden),
// and --from reads it back to the same schedule; a PyTorch DualPipeV file
// with overlapped pairs loads and simulates.
func TestPlanCSV(t *testing.T) {
	dir := t.TempDir()
	for _, comms := range []bool{false, true} {
		out := filepath.Join(dir, "s.csv")
		args := []string{"--schedule", "zb-h1", "--stages", "3", "--microbatches", "4", "--csv", out, "--text"}
		name := "plan_zbh1_p3_m4.compute_only.csv"
		if comms {
			args = append(args, "--csv-comms")
			name = "plan_zbh1_p3_m4.compute_comms.csv"
		}
		code, text, errOut := runPlan(t, args...)
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		b, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		planGolden(t, name, string(b))
		code, back, errOut := runPlan(t, "--from", out, "--text")
		if code != 0 || back != text {
			t.Errorf("--from %s (comms %v): exit %d %s\n%s\nwant\n%s", name, comms, code, errOut, back, text)
		}
	}
	code, out, errOut := runPlan(t, "--from", filepath.Join("testdata", "torch_dualpipev_p2_m4.csv"), "--json")
	if code != 0 || !strings.Contains(out, `"v":2`) || !strings.Contains(out, `"m":4`) {
		t.Errorf("--from a PyTorch DualPipeV CSV: exit %d %s\n%s", code, errOut, out)
	}
	if code, _, errOut := runPlan(t, "--csv-comms"); code == 0 || !strings.Contains(errOut, "give --csv FILE") {
		t.Errorf("--csv-comms alone: exit %d %s", code, errOut)
	}
}

// TestPlanTorchCSV: plan --from a CSV torch 2.15 wrote, with its
// reductions, FSDP actions and send waits, says what it dropped (and the
// JSON carries the notes); torch's off-by-one 1F1B file is refused, exit 1,
// naming the stage and the micro-batches.
func TestPlanTorchCSV(t *testing.T) {
	dir := filepath.Join("..", "..", "schedules", "testdata", "torch")
	code, out, errOut := runPlan(t, "--from", filepath.Join(dir, "torch215_interleavedzb_p2_m4.compute_comms.csv"))
	if code != 0 || !strings.Contains(out, "note: REDUCE_GRAD, WAIT_REDUCE_GRAD (8 actions): taken as pplaunch's data-parallel gradient exchange") ||
		!strings.Contains(out, "note: RESHARD, UNSHARD (8 actions): FSDP's, dropped") {
		t.Errorf("torch's interleaved ZB: exit %d %s\n%s", code, errOut, out)
	}
	code, out, errOut = runPlan(t, "--from", filepath.Join(dir, "torch215_gpipe_p2_m4.csv"), "--json")
	if code != 0 || !strings.Contains(out, `"notes":["REDUCE_GRAD, WAIT_REDUCE_GRAD (4 actions)`) {
		t.Errorf("torch's GPipe --json: exit %d %s\n%s", code, errOut, out)
	}
	code, _, errOut = runPlan(t, "--from", filepath.Join(dir, "torch215_1f1b_p4_m4.csv"))
	if code != 1 || !strings.Contains(errOut, "stage 3 (rank 3) has no forward of micro-batch 0 and runs micro-batch 4, out of range") {
		t.Errorf("torch's 1F1B: exit %d %s", code, errOut)
	}
}
