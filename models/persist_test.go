package models

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/pplaunch/pplaunch/models/checkpoint"
	"github.com/pplaunch/pplaunch/models/data"
	"github.com/pplaunch/pplaunch/models/safetensors"
	"github.com/pplaunch/pplaunch/models/tensor"
)

// run is a model cut into stages, each with its optimizer, trained stage after
// stage as a pipeline would (single process, same numbers).
type run struct {
	stages []*Stage
	opts   []Optimizer
	sched  LRSchedule
}

func newRun(t *testing.T, be tensor.Backend, cfg Config, cut []int, seed uint64) *run {
	t.Helper()
	r := &run{sched: LRSchedule{Peak: 3e-3, Min: 3e-4, Warmup: 5, Total: 100}}
	for i := range cut {
		s, err := NewStage(cfg, cut, i, be, StageOptions{Seed: seed})
		if err != nil {
			t.Fatal(err)
		}
		r.stages = append(r.stages, s)
		r.opts = append(r.opts, NewAdamW(0.1))
	}
	return r
}

// step trains global step `step` on M micro-batches of B sequences from the
// corpus, clipping at global norm 1, and returns the mean loss.
func (r *run) step(t *testing.T, c *data.Corpus, seed uint64, step, M, B int) float64 {
	t.Helper()
	cfg := r.stages[0].Config()
	var loss float64
	for _, s := range r.stages {
		s.SetLossScale(1 / float32(M))
		if err := s.BeginStep(0, M); err != nil {
			t.Fatal(err)
		}
	}
	for mb := range M {
		tokens, targets, err := c.Batch(seed, step, mb, B, cfg.Seq)
		if err != nil {
			t.Fatal(err)
		}
		var act *tensor.Tensor
		for _, s := range r.stages {
			out, err := s.Forward(mb, Input{Act: act, Tokens: tokens, Targets: targets})
			if err != nil {
				t.Fatal(err)
			}
			act, loss = out.Act, loss+out.Loss/float64(M)
		}
		var g *tensor.Tensor
		for i := len(r.stages) - 1; i >= 0; i-- {
			if g, err = r.stages[i].Backward(mb, g); err != nil {
				t.Fatal(err)
			}
		}
	}
	sums := map[string]float64{}
	for _, s := range r.stages {
		if err := s.FinishStep(); err != nil {
			t.Fatal(err)
		}
		for k, v := range GradSumSquares(s.Params()) {
			sums[k] = v
		}
	}
	clip := ClipScale(GlobalNorm(sums), 1)
	for i, s := range r.stages {
		if err := r.opts[i].Step(s.Params(), r.sched.At(step), clip); err != nil {
			t.Fatal(err)
		}
	}
	return loss
}

// valLoss is the mean loss over the first n validation batches.
func (r *run) valLoss(t *testing.T, c *data.Corpus, n, B int) float64 {
	t.Helper()
	cfg := r.stages[0].Config()
	var total float64
	for i := range n {
		tokens, targets, err := c.ValBatch(i, B, cfg.Seq)
		if err != nil {
			t.Fatal(err)
		}
		var act *tensor.Tensor
		for _, s := range r.stages {
			out, err := s.Forward(-1-i, Input{Act: act, Tokens: tokens, Targets: targets})
			if err != nil {
				t.Fatal(err)
			}
			act = out.Act
			total += out.Loss
		}
		for _, s := range r.stages {
			s.Discard(-1 - i)
		}
	}
	return total / float64(n)
}

func (r *run) params() map[string][]float32 {
	m := map[string][]float32{}
	for _, s := range r.stages {
		for _, p := range s.Params() {
			m[p.Name] = slices.Clone(p.Value.Data)
		}
	}
	return m
}

// TestValidationLossFalls trains the default preset on the embedded corpus for
// 20 steps of 4 sequences. Held-out loss starts near ln 256 ≈ 5.55 (uniform over
// bytes) and must end below 3.6. That is safe: English text's byte-frequency
// entropy alone is about 3 nats, which a model reaches in a dozen steps (the
// run ends near 2.75 on either BLAS path, and 40 steps of 8 sequences near 2.6),
// while a model that does not learn stays above 5. The run is kept short
// because it dominates the package's time under -race.
func TestValidationLossFalls(t *testing.T) {
	be := testBackend(t)
	c, err := data.Default()
	if err != nil {
		t.Fatal(err)
	}
	cfg, _ := Preset(DefaultPreset)
	r := newRun(t, be, cfg, []int{cfg.Layers}, 1)
	before := r.valLoss(t, c, 2, 8)
	for step := range 20 {
		r.step(t, c, 1, step, 1, 4)
	}
	after := r.valLoss(t, c, 2, 8)
	t.Logf("validation loss %.3f → %.3f", before, after)
	if before < 5.3 || after > 3.6 {
		t.Fatalf("validation loss %.3f → %.3f, want from about 5.55 to below 3.6", before, after)
	}
}

// TestCheckpointContinueMatchesUninterrupted: save after 2 steps, load into a
// fresh model (cut the same way) and continue 2 more: parameters equal the
// uninterrupted run's bit for bit. A checkpoint of another model is refused.
func TestCheckpointContinueMatchesUninterrupted(t *testing.T) {
	be := testBackend(t)
	c, err := data.Default()
	if err != nil {
		t.Fatal(err)
	}
	cfg := tinyGPT()
	cut := []int{3, 1}
	straight := newRun(t, be, cfg, cut, 4)
	for step := range 4 {
		straight.step(t, c, 9, step, 2, 2)
	}

	first := newRun(t, be, cfg, cut, 4)
	for step := range 2 {
		first.step(t, c, 9, step, 2, 2)
	}
	dir := checkpoint.StepDir(t.TempDir(), 2)
	m := checkpoint.Manifest{Step: 2, Data: checkpoint.DataPosition{Seed: 9, Step: 2}, Model: cfg.JSON(),
		Optimizer: "adamw", NumStages: len(cut)}
	var shards []checkpoint.Shard
	for i, s := range first.stages {
		shards = append(shards, s.Shard(first.opts[i]))
	}
	if err := checkpoint.Save(dir, m, shards); err != nil {
		t.Fatal(err)
	}

	resumed := newRun(t, be, cfg, cut, 77) // a different seed: everything must come from the checkpoint
	for i, s := range resumed.stages {
		man, sh, err := checkpoint.LoadStage(dir, i, checkpoint.Expect{Model: cfg.JSON(), Optimizer: "adamw",
			Stages: len(cut), Params: s.TensorSpecs()})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.LoadShard(sh, resumed.opts[i], man.Step); err != nil {
			t.Fatal(err)
		}
	}
	for step := 2; step < 4; step++ {
		resumed.step(t, c, 9, step, 2, 2)
	}
	want, got := straight.params(), resumed.params()
	for name, w := range want {
		if !slices.Equal(got[name], w) {
			t.Fatalf("%s differs between resumed and uninterrupted runs", name)
		}
	}

	// A shard whose optimizer state lacks a parameter, or holds the wrong
	// number of values for one, is refused rather than restarted from zeros.
	_, sh, err := checkpoint.LoadStage(dir, 1, checkpoint.Expect{Model: cfg.JSON(), Optimizer: "adamw"})
	if err != nil {
		t.Fatal(err)
	}
	s1 := resumed.stages[1]
	short := checkpoint.Shard{Params: sh.Params, State: map[string][]checkpoint.Tensor{
		SlotAdamM: sh.State[SlotAdamM], SlotAdamV: sh.State[SlotAdamV][1:]}}
	if err := s1.LoadShard(short, NewAdamW(0.1), 2); err == nil || !strings.Contains(err.Error(), "optimizer slot adam_v has no values for") {
		t.Fatalf("state without a parameter: %v", err)
	}
	bad := slices.Clone(sh.State[SlotAdamM])
	bad[0].Data = bad[0].Data[:1]
	wrong := checkpoint.Shard{Params: sh.Params, State: map[string][]checkpoint.Tensor{SlotAdamM: bad, SlotAdamV: sh.State[SlotAdamV]}}
	if err := s1.LoadShard(wrong, NewAdamW(0.1), 2); err == nil || !strings.Contains(err.Error(), "optimizer slot adam_m has 1 values for") {
		t.Fatalf("state of the wrong size: %v", err)
	}

	other := cfg
	other.Width = 32
	_, _, err = checkpoint.LoadStage(dir, 0, checkpoint.Expect{Model: other.JSON(), Optimizer: "adamw", Stages: 2})
	if err == nil || !strings.Contains(err.Error(), "width") {
		t.Fatalf("checkpoint of a narrower model loaded: %v", err)
	}
}

func TestInitFrom(t *testing.T) {
	be := testBackend(t)
	cfg := tinyGPT()
	cfg.Tied = true
	src, _ := NewStage(cfg, []int{4}, 0, be, StageOptions{Seed: 9})
	var ts []safetensors.Tensor
	for _, p := range src.Params() {
		if p.TiedTo == "" { // a tied head is stored once, as nanoGPT does
			ts = append(ts, safetensors.FromFloat32(p.Name, p.Shape, p.Value.Data))
		}
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "model.safetensors")
	if err := safetensors.WriteFile(path, ts, nil); err != nil {
		t.Fatal(err)
	}
	dst, _ := NewStage(cfg, []int{2, 2}, 1, be, StageOptions{Seed: 1})
	if err := dst.InitFrom(path); err != nil {
		t.Fatal(err)
	}
	for _, p := range dst.Params() {
		want := src.Param(p.Name).Value.Data
		if !slices.Equal(p.Value.Data, want) {
			t.Fatalf("%s not loaded", p.Name)
		}
	}

	bad := slices.Clone(ts)
	bad[len(bad)-2] = safetensors.FromFloat32(bad[len(bad)-2].Name, []int{3}, []float32{1, 2, 3})
	badPath := filepath.Join(dir, "bad.safetensors")
	if err := safetensors.WriteFile(badPath, bad, nil); err != nil {
		t.Fatal(err)
	}
	if err := dst.InitFrom(badPath); err == nil || !strings.Contains(err.Error(), "has shape [3]") {
		t.Fatalf("wrong shape: %v", err)
	}
	// A tied head in the file must equal the embedding it is tied to.
	untied := append(slices.Clone(ts), safetensors.FromFloat32("lm_head.weight", []int{cfg.Vocab, cfg.Width},
		make([]float32, cfg.Vocab*cfg.Width)))
	untiedPath := filepath.Join(dir, "untied.safetensors")
	if err := safetensors.WriteFile(untiedPath, untied, nil); err != nil {
		t.Fatal(err)
	}
	if err := dst.InitFrom(untiedPath); err == nil || !strings.Contains(err.Error(), "hold different values, but the model ties them") {
		t.Fatalf("tied head that differs from the embedding: %v", err)
	}
	same := append(slices.Clone(ts), safetensors.FromFloat32("lm_head.weight", []int{cfg.Vocab, cfg.Width},
		src.Param("transformer.wte.weight").Value.Data))
	samePath := filepath.Join(dir, "same.safetensors")
	if err := safetensors.WriteFile(samePath, same, nil); err != nil {
		t.Fatal(err)
	}
	if err := dst.InitFrom(samePath); err != nil {
		t.Fatalf("tied head stored beside an equal embedding: %v", err)
	}

	missing := filepath.Join(dir, "missing.safetensors")
	if err := safetensors.WriteFile(missing, ts[:3], nil); err != nil {
		t.Fatal(err)
	}
	if err := dst.InitFrom(missing); err == nil || !strings.Contains(err.Error(), "no tensor transformer.h.2") {
		t.Fatalf("missing tensor: %v", err)
	}
}
