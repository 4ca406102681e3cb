package bench

import (
	"bufio"
	"encoding/json"
	"math"
	"os"
	"strings"
	"testing"

	"github.com/pplaunch/pplaunch/plan"
	"github.com/pplaunch/pplaunch/ranks"
)

// readRecords reads a train --metrics file from testdata.
func readRecords(t *testing.T, path string) []ranks.StepRecord {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []ranks.StepRecord
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var r ranks.StepRecord
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
	return out
}

func readTestProfile(t *testing.T, path string) *plan.Profile {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	p, err := plan.ReadProfile(f)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }

// A real run's metrics and profile (pplaunch --nproc 2 train --pp 2
// --microbatches 4 --steps 5 --eval-every 0 --metrics ... --profile ...):
// the row is the mean of the measured steps, its parts add up to the step.
func TestScalingRowFromARun(t *testing.T) {
	recs := readRecords(t, "testdata/scaling_w2.jsonl")
	prof := readTestProfile(t, "testdata/scaling_w2_profile.json")
	size := ScalingSize{Nodes: 1, NProc: 2, World: 2, PP: 2, DP: 1, Micro: 4, MicroSize: 4, GlobalBatch: 16}
	row, err := ScalingRun{Size: size, Schedule: "1f1b", Records: recs, Profile: prof, Warmup: 2, Measured: 2}.Row()
	if err != nil {
		t.Fatal(err)
	}
	step := (recs[2].StepS + recs[3].StepS) / 2
	if !near(row.StepS, step) || row.Steps != 2 {
		t.Errorf("step %v over %d steps, want %v over 2 (records 2 and 3)", row.StepS, row.Steps, step)
	}
	tokens := recs[2].TokensPerS * recs[2].StepS
	if !near(row.TokensPerS, tokens/step) {
		t.Errorf("tokens/s %v, want %v tokens a step / %v s", row.TokensPerS, tokens, step)
	}
	if sum := row.ComputeS + row.TransferS + row.IdleS; !near(sum, row.StepS) {
		t.Errorf("compute %v + transfer %v + idle %v = %v, want the step %v", row.ComputeS, row.TransferS, row.IdleS, sum, row.StepS)
	}
	if row.ComputeS <= 0 || row.TransferS <= 0 || row.IdleS < 0 || row.TransferShare <= 0 || row.TransferShare >= 1 {
		t.Errorf("parts %+v: want positive compute and transfer, a share in (0, 1)", row)
	}
	if row.PredictedStepS <= 0 || row.PredictedStepS > 10*row.StepS {
		t.Errorf("predicted step %v for a measured %v", row.PredictedStepS, row.StepS)
	}
	if row.PeakKind != "rss" || row.PeakBytes < recs[2].RSS[0] {
		t.Errorf("peak %d %s, want the most RSS of a rank (%d at least)", row.PeakBytes, row.PeakKind, recs[2].RSS[0])
	}
	if _, err := (ScalingRun{Size: size, Schedule: "1f1b", Records: recs, Profile: prof, Warmup: 4, Measured: 2}).Row(); err == nil ||
		!strings.Contains(err.Error(), "5 step records, want 4 warm-up and 2 measured") {
		t.Errorf("too few records: %v", err)
	}
	four := size
	four.World = 4
	if _, err := (ScalingRun{Size: four, Schedule: "1f1b", Records: recs, Warmup: 0, Measured: 1}).Row(); err == nil ||
		!strings.Contains(err.Error(), "per-rank times for 2 ranks") {
		t.Errorf("records of another world: %v", err)
	}
}

// The split by hand: rank 0 computes 0.6 s and waits 0.1 s for messages,
// rank 1 computes 0.8 s and waits for none; the reductions took 0.01 s
// where they waited least.
func TestScalingSplit(t *testing.T) {
	rec := ranks.StepRecord{StepS: 1, ComputeS: []float64{0.5, 0.7}, OptimizerS: []float64{0.1, 0.1}, ReduceS: []float64{0.2, 0.01},
		TransferWaitS: []float64{0.1, 0}}
	c, x, i := split(rec)
	if !near(c, 0.7) || !near(x, (0.11+0.01)/2) || !near(i, 1-0.7-0.06) {
		t.Errorf("compute %v transfer %v idle %v; want 0.7, 0.06, 0.24", c, x, i)
	}
	// A rank's parts never exceed the step.
	rec.ComputeS = []float64{1.2, 0.85}
	c, x, i = split(rec)
	if !near(c, (1+0.95)/2) || !near(x, 0.01/2) || !near(i, 0.04/2) {
		t.Errorf("compute %v transfer %v idle %v; want 0.975, 0.005, 0.02 (capped at the step)", c, x, i)
	}
}

func TestSetEfficiency(t *testing.T) {
	rows := []ScalingRow{{ScalingSize: ScalingSize{World: 1}, TokensPerS: 1000}, {ScalingSize: ScalingSize{World: 2}, TokensPerS: 1600},
		{ScalingSize: ScalingSize{World: 4}, TokensPerS: 4000}}
	SetEfficiency(rows)
	for i, want := range []float64{1, 0.8, 1} {
		if !near(rows[i].Efficiency, want) {
			t.Errorf("world %d: efficiency %v, want %v", rows[i].World, rows[i].Efficiency, want)
		}
	}
}
