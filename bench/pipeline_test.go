package bench

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/pplaunch/pplaunch/models"
	"github.com/pplaunch/pplaunch/ranks"
	"github.com/pplaunch/pplaunch/schedules"
)

// TestOverheadSmall checks the overhead driver end to end on a tiny case:
// every schedule runs through the executor and TCP, and the report is whole.
// (Calibrated times are at least the nominal ones: a sleep never ends early.)
func TestOverheadSmall(t *testing.T) {
	for _, name := range schedules.Names {
		rep, err := Overhead(OverheadOptions{Schedule: name, P: 2, M: 2, Cost: schedules.StageCost{F: 1e-3, B: 2e-3, I: 1e-3, W: 1e-3}, ActElems: 16, Steps: 1})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		v := float64(max(rep.V, 1))
		if rep.Measured <= 0 || rep.Ideal <= 0 || rep.Ratio <= 0 || rep.Calibrated.F < 1e-3/v {
			t.Errorf("%s: incomplete report %+v", name, rep)
		}
	}
}

func TestOverheadRefusesBadOptions(t *testing.T) {
	cost := schedules.StageCost{F: 1e-3, B: 2e-3, I: 1e-3, W: 1e-3}
	for _, c := range []struct {
		name string
		o    OverheadOptions
		want string
	}{
		{"no steps", OverheadOptions{Schedule: "1f1b", P: 2, M: 2, Cost: cost}, "steps 0"},
		{"negative cost", OverheadOptions{Schedule: "1f1b", P: 2, M: 2, Steps: 1, Cost: schedules.StageCost{F: -1}}, "nothing negative"},
		{"unknown schedule", OverheadOptions{Schedule: "2f2b", P: 2, M: 2, Steps: 1, Cost: cost}, "2f2b"},
	} {
		if _, err := Overhead(c.o); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error containing %q", c.name, err, c.want)
		}
	}
}

// BenchmarkPipelineOverhead prints, for each schedule at P=4 and M=8 and 32,
// the executor's step time (real executor, TCP over loopback, stages that
// sleep a fixed time per action) against the simulator's makespan for the
// action times as measured (calibrated). The aim is a ratio ≤ 1.05.
//
//	go test -run '^$' -bench PipelineOverhead -benchtime 1x ./bench/
func BenchmarkPipelineOverhead(b *testing.B) {
	cost := schedules.StageCost{F: 2e-3, B: 4e-3, I: 2e-3, W: 2e-3}
	var reps []OverheadReport
	for range b.N {
		reps = reps[:0]
		for _, m := range []int{8, 32} {
			for _, name := range schedules.Names {
				rep, err := Overhead(OverheadOptions{Schedule: name, P: 4, M: m, Cost: cost, ActElems: 16 << 10, Steps: 5})
				if err != nil {
					b.Fatal(err)
				}
				reps = append(reps, rep)
			}
		}
	}
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "schedule\tP\tM\tF ms\tB ms\tsimulated ms\tmeasured ms\tratio\t\n")
	for _, r := range reps {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%.3f\t%.3f\t%.1f\t%.1f\t%.3f\t\n", r.Schedule, r.P, r.M, 1e3*r.Calibrated.F, 1e3*r.Calibrated.B,
			millis(r.Ideal), millis(r.Measured), r.Ratio)
	}
	tw.Flush()
	fmt.Println("activations 64 KiB per message; nominal F 2 ms, B 4 ms (I, W 2 ms); median of 5 steps")
}

func millis(d time.Duration) float64 { return float64(d) / 1e6 }

// buildPplaunch builds the binary for the job benchmarks.
func buildPplaunch(b *testing.B) string {
	bin := filepath.Join(b.TempDir(), "pplaunch")
	if out, err := exec.Command("go", "build", "-o", bin, "../cmd/pplaunch").CombinedOutput(); err != nil {
		b.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// trainJob runs `pplaunch --nproc n --standalone train ARGS` and returns rank 0's
// metrics.
func trainJob(b *testing.B, bin string, n int, args ...string) []ranks.StepRecord {
	metrics := filepath.Join(b.TempDir(), fmt.Sprintf("m%d.jsonl", time.Now().UnixNano()))
	argv := append([]string{"--nproc", fmt.Sprint(n), "--standalone", "train", "--metrics", metrics}, args...)
	if out, err := exec.Command(bin, argv...).CombinedOutput(); err != nil {
		b.Fatalf("pplaunch %s: %v\n%s", strings.Join(argv, " "), err, out)
	}
	f, err := os.Open(metrics)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	recs, err := ranks.ReadStepRecords(f)
	if err != nil {
		b.Fatal(err)
	}
	if len(recs) < 2 { // steady leaves out the first step
		b.Fatalf("pplaunch %s: %d metric records in %s, want at least 2", strings.Join(argv, " "), len(recs), metrics)
	}
	return recs
}

// steadyStats are means over the records after the first (which pays for warm-up).
type steadyStats struct {
	stepS, tokS, bubble, predicted float64
	cpuS                           float64 // all ranks together
	bestS                          float64 // the fastest step
}

func steady(recs []ranks.StepRecord) steadyStats {
	var s steadyStats
	rs := recs[1:]
	s.bestS = rs[0].StepS
	for _, r := range rs {
		s.bestS = min(s.bestS, r.StepS)
		s.stepS += r.StepS
		s.tokS += r.TokensPerS
		s.bubble += r.BubbleMeasured
		s.predicted += r.BubblePredicted
		for _, c := range r.CPUS {
			s.cpuS += c
		}
	}
	n := float64(len(rs))
	s.stepS, s.tokS, s.bubble, s.predicted, s.cpuS = s.stepS/n, s.tokS/n, s.bubble/n, s.predicted/n, s.cpuS/n
	return s
}

// BenchmarkTrainSchedules prints the default job (`pplaunch --nproc 4 train`:
// gpt-tiny, 4 stages, 8 micro-batches of 4) for each schedule: tokens/s,
// step time, measured bubble and the simulator's bubble for the measured
// action times, over 30 steps (the first left out). The model has 8 layers
// instead of the preset's 4 so that interleaved (v=2) has one per stage.
//
//	go test -run '^$' -bench TrainSchedules -benchtime 1x ./bench/
func BenchmarkTrainSchedules(b *testing.B) {
	bin := buildPplaunch(b)
	type row struct {
		name string
		steadyStats
	}
	var rows []row
	for range b.N {
		rows = rows[:0]
		for _, name := range schedules.Names {
			recs := trainJob(b, bin, 4, "--schedule", name, "--layers", "8", "--steps", "30", "--eval-every", "0", "--eval-batches", "0")
			rows = append(rows, row{name, steady(recs)})
		}
	}
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "schedule\ttokens/s\tstep ms\tbubble measured\tbubble predicted\t\n")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%.0f\t%.1f\t%.1f%%\t%.1f%%\t\n", r.name, r.tokS, 1e3*r.stepS, 100*r.bubble, 100*r.predicted)
	}
	tw.Flush()
}

// BenchmarkTrainTwoRanks prints the step time of the bench-step GPT (width
// 256, 4 layers, 4 heads, sequence 128, batch 16) on 2 ranks with one thread
// each, for 4 and 8 micro-batches, GPipe and 1F1B, over 10 steps (the first
// left out). Reference on this machine: a hand-written two-rank PyTorch 1.13
// pipeline over gloo ~360 ms per step; one PyTorch process, 2 threads ~320 ms.
//
//	go test -run '^$' -bench TrainTwoRanks -benchtime 1x ./bench/
func BenchmarkTrainTwoRanks(b *testing.B) {
	bin := buildPplaunch(b)
	type row struct {
		name string
		m    int
		steadyStats
	}
	var rows []row
	var one [2]StepReport
	for range b.N {
		rows = rows[:0]
		cfg, err := models.Preset("gpt-small")
		if err != nil {
			b.Fatal(err)
		}
		for i, threads := range []int{1, 2} {
			if one[i], err = Step(StepOptions{Model: cfg, Batch: 16, Threads: threads, Steps: 5, Warmup: 1, BLAS: "auto", Seed: 1}); err != nil {
				b.Fatal(err)
			}
		}
		for _, m := range []int{4, 8} {
			for _, name := range []string{"gpipe", "1f1b"} {
				recs := trainJob(b, bin, 2, "--model", "gpt-small", "--schedule", name, "--microbatches", fmt.Sprint(m),
					"--microbatch-size", fmt.Sprint(16/m), "--steps", "10", "--eval-every", "0", "--eval-batches", "0")
				rows = append(rows, row{name, m, steady(recs)})
			}
		}
	}
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "run\tmicro-batches\tstep ms\tbest step ms\tCPU ms/step\ttokens/s\tbubble measured\t\n")
	for _, r := range rows {
		fmt.Fprintf(tw, "2 ranks %s\t%d\t%.1f\t%.1f\t%.1f\t%.0f\t%.1f%%\t\n", r.name, r.m, 1e3*r.stepS, 1e3*r.bestS, 1e3*r.cpuS, r.tokS, 100*r.bubble)
	}
	for _, o := range one {
		fmt.Fprintf(tw, "1 process, %d thread(s) (bench step)\t-\t%.1f\t-\t%.1f\t%.0f\t-\t\n", o.Threads, o.StepMS, o.CPUMS, o.TokensPerSec)
	}
	tw.Flush()
	fmt.Println("step ms: mean of steps 2..10; best: the fastest of them; bench step: median of 5")
	fmt.Println("CPU ms/step: all ranks' process CPU time together (a shared machine stretches wall time, not work)")
	fmt.Println("reference, side by side: OPENBLAS_CORETYPE=SKYLAKEX /usr/bin/python3 bench/pipeline_torch.py (PyTorch two-rank pipeline over gloo)")
}
