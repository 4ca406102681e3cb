package ranks

import (
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pplaunch/pplaunch/models/checkpoint"
	"github.com/pplaunch/pplaunch/schedules"
	"github.com/pplaunch/pplaunch/store"
)

func TestDiffFlags(t *testing.T) {
	a := []FlagValue{{"--lr", "0.003"}, {"--steps", "10"}, {"--data", ""}}
	for _, tc := range []struct {
		name  string
		mine  []FlagValue
		want  []FlagDiff
		error string
	}{
		{"same", a, nil, ""},
		{"lr", []FlagValue{{"--lr", "0.01"}, {"--steps", "10"}, {"--data", ""}}, []FlagDiff{{"--lr", "0.01", "0.003"}},
			`--lr 0.01 on rank 2 (node 1), 0.003 on rank 0: start every node with the same training flags`},
		{"two", []FlagValue{{"--lr", "0.01"}, {"--steps", "10"}, {"--data", "x.txt"}}, []FlagDiff{{"--lr", "0.01", "0.003"}, {"--data", "x.txt", ""}},
			`--lr 0.01 on rank 2 (node 1), 0.003 on rank 0; --data x.txt on rank 2 (node 1), "" on rank 0: start`},
		{"only mine", append(append([]FlagValue{}, a...), FlagValue{"--new", "1"}), []FlagDiff{{"--new", "1", "(unknown)"}}, "--new 1 on rank 2"},
		{"only rank 0", a[:2], []FlagDiff{{"--data", "(unknown)", ""}}, `--data (unknown) on rank 2 (node 1), "" on rank 0`},
	} {
		got := DiffFlags(tc.mine, a)
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: DiffFlags = %v, want %v", tc.name, got, tc.want)
		}
		if tc.error != "" {
			if err := flagMismatch(2, 1, got); !strings.Contains(err.Error(), tc.error) {
				t.Errorf("%s: %v, want %q", tc.name, err, tc.error)
			}
		}
	}
}

// TestFlagsCoverConfig: the flags compared between ranks are the model's
// kind, the cut, the schedule (a file's with a digest of its text) and the
// agreed flags the option table gives, as given; each of the first three
// changes one flag.
func TestFlagsCoverConfig(t *testing.T) {
	base := tiny(t)
	base.Agreed = []FlagValue{{"--lr", "0.003"}, {"--schedule", "ignored: the schedule is compared with its digest"}, {"--seed", "1"}}
	got := base.Flags([]int{4})
	want := []FlagValue{{"--model", "gpt"}, {"--layers-per-stage", "4"}, {"--schedule", base.Schedule}, {"--lr", "0.003"}, {"--seed", "1"}}
	if !slices.Equal(got, want) {
		t.Errorf("flags %v, want %v", got, want)
	}
	for name, c := range map[string]func(*TrainConfig){
		"--model":    func(c *TrainConfig) { c.Model.Kind = "mlp" },
		"--schedule": func(c *TrainConfig) { c.ScheduleText = "0: F0 B0\n" },
		"--lr":       func(c *TrainConfig) { c.Agreed = []FlagValue{{"--lr", "0.01"}, {"--seed", "1"}} },
	} {
		other := base
		c(&other)
		if d := DiffFlags(other.Flags([]int{4}), got); len(d) != 1 || d[0].Flag != name {
			t.Errorf("changing %s: differences %v", name, d)
		}
	}
	if d := DiffFlags(base.Flags([]int{2, 2}), base.Flags([]int{3, 1})); len(d) != 1 || d[0].Flag != "--layers-per-stage" {
		t.Errorf("another cut: %v, want --layers-per-stage", d)
	}
}

// TestCheckConfigExchange: each rank compares its flags with those rank 0
// published in the store; a rank started with another --lr is refused.
func TestCheckConfigExchange(t *testing.T) {
	st := store.NewMemory()
	defer st.Close()
	base := tiny(t)
	base.Agreed = []FlagValue{{"--lr", "0.003"}}
	other := base
	other.Agreed = []FlagValue{{"--lr", "0.01"}}
	mk := func(rank, node int, cfg TrainConfig) *rankJob {
		return &rankJob{cfg: cfg, rankPlace: rankPlace{cut: []int{4}}, job: Job{Rank: rank, Node: node, Size: 3, Store: st}}
	}
	ctx := context.Background()
	if err := mk(0, 0, base).checkConfig(ctx); err != nil {
		t.Fatal(err)
	}
	if err := mk(1, 0, base).checkConfig(ctx); err != nil {
		t.Errorf("rank 1 with rank 0's flags: %v", err)
	}
	err := mk(2, 1, other).checkConfig(ctx)
	if want := "--lr 0.01 on rank 2 (node 1), 0.003 on rank 0: start every node with the same training flags"; err == nil || err.Error() != want {
		t.Errorf("rank 2 with --lr 0.01: %v, want %q", err, want)
	}
}

// TestNonFiniteFlagsRefused: NaN and infinite values of the real-valued
// flags are refused by Plan (the agent's and every rank's check), naming the
// flag.
func TestNonFiniteFlagsRefused(t *testing.T) {
	for _, tc := range []struct {
		flag string
		edit func(*TrainConfig, float64)
	}{
		{"--lr", func(c *TrainConfig, v float64) { c.LR = v }},
		{"--min-lr", func(c *TrainConfig, v float64) { c.MinLR = v }},
		{"--weight-decay", func(c *TrainConfig, v float64) { c.WeightDecay = v }},
		{"--clip", func(c *TrainConfig, v float64) { c.Clip = v }},
	} {
		for _, v := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
			c := tiny(t)
			tc.edit(&c, v)
			for _, size := range []int{0, 1} {
				if _, err := c.Plan(size); err == nil || !strings.Contains(err.Error(), tc.flag) || !strings.Contains(err.Error(), "finite") {
					t.Errorf("%s %v (world %d): %v, want a refusal naming %s", tc.flag, v, size, err, tc.flag)
				}
			}
		}
	}
}

// TestTrainDivergenceStops: a learning rate so large that the weights
// overflow stops the run at the step whose loss is not finite, with an
// error naming it, and no checkpoint holds a non-finite value.
func TestTrainDivergenceStops(t *testing.T) {
	// 1e38: the weights stay finite, the next loss is not; 1e300: the
	// first update overflows them, and the save after it is refused.
	for _, lr := range []float64{1e38, 1e300} {
		divergence(t, lr)
	}
}

func divergence(t *testing.T, lr float64) {
	cfg := tiny(t)
	cfg.PP, cfg.Steps, cfg.LR, cfg.MinLR, cfg.Warmup, cfg.Clip, cfg.Optimizer = 2, 6, lr, 0, 0, 0, "sgd"
	cfg.CheckpointDir, cfg.CheckpointEvery = t.TempDir(), 1
	_, errs := trainInProcess(t, cfg, nil)
	err := errors.Join(errs...)
	if err == nil || !strings.Contains(err.Error(), "diverged") {
		t.Fatalf("errors %v, want a divergence", err)
	}
	steps, cerr := checkpoint.Complete(cfg.CheckpointDir)
	if cerr != nil {
		t.Fatal(cerr)
	}
	for _, s := range steps {
		_, ts, err := checkpoint.ReadTensors(checkpoint.StepDir(cfg.CheckpointDir, s))
		if err != nil {
			t.Fatal(err)
		}
		for _, x := range ts {
			for _, v := range x.Data {
				if !finite(float64(v)) {
					t.Fatalf("checkpoint of step %d: %s holds %v", s, x.Name, v)
				}
			}
		}
	}
	t.Logf("stopped with %v; checkpoints %v", err, steps)
}

func TestCheckStepAndShard(t *testing.T) {
	for _, tc := range []struct {
		loss, norm float64
		bad        bool
	}{{1, 2, false}, {math.NaN(), 2, true}, {1, math.Inf(1), true}, {math.Inf(-1), math.NaN(), true}} {
		err := checkStep(7, tc.loss, tc.norm)
		if (err != nil) != tc.bad || (err != nil && !strings.HasPrefix(err.Error(), "step 7: ")) {
			t.Errorf("checkStep(7, %v, %v) = %v, want refused %v", tc.loss, tc.norm, err, tc.bad)
		}
	}
	ok := checkpoint.Shard{Params: []checkpoint.Tensor{{Name: "w", Shape: []int{2}, Data: []float32{1, 2}}},
		State: map[string][]checkpoint.Tensor{"m": {{Name: "w", Shape: []int{2}, Data: []float32{0, 0}}}}}
	if err := checkShard(0, ok); err != nil {
		t.Error(err)
	}
	bad := ok
	bad.State = map[string][]checkpoint.Tensor{"m": {{Name: "w", Shape: []int{2}, Data: []float32{0, float32(math.Inf(1))}}}}
	if err := checkShard(3, bad); err == nil || !strings.Contains(err.Error(), "stage 3: m/w[1] is +Inf") {
		t.Errorf("checkShard: %v, want a refusal naming m/w[1]", err)
	}
}

func TestPlanResume(t *testing.T) {
	for _, tc := range []struct {
		resume, overwrite bool
		steps             []int
		want              resumePlan
		err               string
	}{
		{false, false, nil, resumePlan{}, ""},
		{true, false, nil, resumePlan{}, ""},
		{true, false, []int{2, 4}, resumePlan{Step: 4}, ""},
		{false, true, nil, resumePlan{Clear: true}, ""},
		{false, true, []int{2}, resumePlan{Clear: true}, ""},
		{false, false, []int{2, 4}, resumePlan{}, "--checkpoint-dir d holds 2 checkpoints of another run (the newest step-000004): continue that run with --resume, choose another directory, or pass --overwrite"},
	} {
		got, err := planResume("d", tc.resume, tc.overwrite, tc.steps)
		if got != tc.want || (err == nil) != (tc.err == "") || (err != nil && !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("planResume(resume %v, overwrite %v, %v) = %+v, %v; want %+v, %q", tc.resume, tc.overwrite, tc.steps, got, err, tc.want, tc.err)
		}
	}
}

// saveFake writes a complete checkpoint of step under root.
func saveFake(t *testing.T, root string, step int, v float32) {
	t.Helper()
	m := checkpoint.Manifest{Step: step, Data: checkpoint.DataPosition{Seed: 7, Step: step}, Model: []byte(`{}`), Optimizer: "sgd"}
	sh := checkpoint.Shard{Params: []checkpoint.Tensor{{Name: "w", Shape: []int{1}, Data: []float32{v}}}}
	if err := checkpoint.Save(checkpoint.StepDir(root, step), m, []checkpoint.Shard{sh}); err != nil {
		t.Fatal(err)
	}
}

// TestResumeRankZeroChooses: rank 0 chooses the checkpoint and the others
// load that one, even where their view of the directory (a caching node of a
// shared filesystem) holds a newer one; a rank that cannot see rank 0's
// choice, or sees another version of it, fails naming it.
func TestResumeRankZeroChooses(t *testing.T) {
	r0, r1 := t.TempDir(), t.TempDir()
	for _, s := range []int{2, 4} {
		saveFake(t, r0, s, float32(s))
		saveFake(t, r1, s, float32(s))
	}
	saveFake(t, r1, 6, 6) // only rank 1's view has step 6
	run := func(root1 string) error {
		st := store.NewMemory()
		defer st.Close()
		cfg := TrainConfig{Resume: true, Timeout: 10 * time.Second, Seed: 7}
		ctx := context.Background()
		c0 := cfg
		c0.CheckpointDir = r0
		p, err := (&checkpointer{&rankJob{cfg: c0, job: Job{Rank: 0, Store: st}}}).resumePoint(ctx)
		if err != nil || p.Step != 4 {
			t.Fatalf("rank 0 chose %+v, %v; want step 4", p, err)
		}
		c1 := cfg
		c1.CheckpointDir = root1
		p1, err := (&checkpointer{&rankJob{cfg: c1, job: Job{Rank: 1, Store: st}}}).resumePoint(ctx)
		if err != nil {
			return err
		}
		dir, m, err := p1.open(root1)
		if err == nil && (m.Step != 4 || dir != checkpoint.StepDir(root1, 4)) {
			t.Errorf("rank 1 opened %s (step %d), want rank 0's step 4", dir, m.Step)
		}
		return err
	}
	if err := run(r1); err != nil {
		t.Errorf("rank 1 with a newer checkpoint in its view: %v", err)
	}
	if err := os.RemoveAll(checkpoint.StepDir(r1, 4)); err != nil {
		t.Fatal(err)
	}
	if err := run(r1); err == nil || !strings.Contains(err.Error(), "rank 0 chose checkpoint "+checkpoint.StepDir(r1, 4)) {
		t.Errorf("rank 1 without step 4: %v, want a failure naming it", err)
	}
	saveFake(t, r1, 4, 44) // another version of step 4
	if err := run(r1); err == nil || !strings.Contains(err.Error(), "another version") {
		t.Errorf("rank 1 with another step 4: %v, want a failure naming it", err)
	}
}

// TestResumeNewRunRefusedOrOverwritten: a new run into a root holding
// another run's checkpoints is refused; with Overwrite they are removed
// before the run starts (and temporary files of killed saves with them).
func TestResumeNewRunRefusedOrOverwritten(t *testing.T) {
	root := t.TempDir()
	saveFake(t, root, 2, 1)
	tmp := filepath.Join(checkpoint.StepDir(root, 2), ".stage-000-of-001.safetensors.tmp-123")
	if err := os.WriteFile(tmp, []byte("torn"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := TrainConfig{CheckpointDir: root, Timeout: 10 * time.Second}
	if err := CheckCheckpointDir(cfg); err == nil || !strings.Contains(err.Error(), "--overwrite") {
		t.Errorf("CheckCheckpointDir: %v, want a refusal", err)
	}
	st := store.NewMemory()
	defer st.Close()
	tr := &checkpointer{&rankJob{cfg: cfg, job: Job{Rank: 0, Store: st}}}
	if _, err := tr.resumePoint(context.Background()); err == nil || !strings.Contains(err.Error(), "another run") {
		t.Errorf("new run: %v, want a refusal", err)
	}
	if _, err := os.Stat(tmp); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("temporary file of a killed save still there: %v", err)
	}
	tr.cfg.Overwrite = true
	if p, err := tr.resumePoint(context.Background()); err != nil || p.Step != 0 {
		t.Fatalf("--overwrite: %+v, %v", p, err)
	}
	if steps, err := checkpoint.Complete(root); err != nil || len(steps) != 0 {
		t.Errorf("after --overwrite: checkpoints %v, %v; want none", steps, err)
	}
}

// TestSaveCleansKilledSaveTemps: a temporary shard file that appears in an
// earlier step's directory during the run (a save killed on another node of
// a shared filesystem) is gone after the next save, and the checkpoints are
// complete.
func TestSaveCleansKilledSaveTemps(t *testing.T) {
	cfg := tiny(t)
	cfg.PP, cfg.Steps, cfg.CheckpointDir, cfg.CheckpointEvery = 2, 3, t.TempDir(), 1
	tmp := filepath.Join(checkpoint.StepDir(cfg.CheckpointDir, 1), ".stage-001-of-002.safetensors.tmp-99")
	_, errs := trainInProcess(t, cfg, func(rank int, _ <-chan struct{}, job *Job) {
		if rank != 1 {
			return
		}
		done := false
		job.Stall = func(step int, _ schedules.Action) {
			if step == 1 && !done {
				done = true
				if err := os.WriteFile(tmp, []byte("torn"), 0o644); err != nil {
					t.Error(err)
				}
			}
		}
	})
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(tmp); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("temporary file of a killed save after the next saves: %v", err)
	}
	if steps, err := checkpoint.Complete(cfg.CheckpointDir); err != nil || len(steps) != 3 {
		t.Errorf("checkpoints %v, %v; want steps 1, 2, 3", steps, err)
	}
}
