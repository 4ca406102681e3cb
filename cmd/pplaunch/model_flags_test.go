package main

import (
	"bytes"
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/pplaunch/pplaunch/models"
)

func TestModelFlags(t *testing.T) {
	for _, c := range []struct {
		f    modelFlags
		want models.Config
		err  string
	}{
		{modelFlags{Model: "gpt-small"}, models.Config{Kind: "gpt", Vocab: 256, Layers: 4, Width: 256, Heads: 4, Seq: 128}, ""},
		{modelFlags{Model: "gpt-tiny", Layers: 2, Width: 64, Heads: 2, Seq: 32, Tied: true}, models.Config{Kind: "gpt", Vocab: 256, Layers: 2, Width: 64, Heads: 2, Seq: 32, Tied: true}, ""},
		{modelFlags{Model: "gpt-xl"}, models.Config{}, `--model: unknown model "gpt-xl"`},
		{modelFlags{Model: "gpt-tiny", Heads: 3}, models.Config{}, "width 128 is not divisible by 3 heads"},
		{modelFlags{Model: "gpt-tiny", Seq: -1}, models.Config{}, "--seq -1"},
		{modelFlags{Model: "gpt2", Vocab: 50257, Gelu: "exact"}, models.Config{Kind: "gpt", Vocab: 50257, Layers: 12, Width: 768, Heads: 12, Seq: 1024, Tied: true, Gelu: "exact"}, ""},
		{modelFlags{Model: "gpt-tiny", Gelu: "tanh"}, models.Config{Kind: "gpt", Vocab: 256, Layers: 4, Width: 128, Heads: 4, Seq: 64}, ""},
		{modelFlags{Model: "gpt-tiny", Gelu: "erf"}, models.Config{}, `--gelu "erf": want tanh or exact`},
		{modelFlags{Model: "gpt-tiny", Vocab: -2}, models.Config{}, "--vocab -2: want a positive number"},
		{modelFlags{Model: "gpt-tiny", Vocab: 1}, models.Config{}, "model vocab 1: want at least 2"},
	} {
		got, err := c.f.config()
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%+v: error %v, want %q", c.f, err, c.err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("%+v: %+v, %v; want %+v", c.f, got, err, c.want)
		}
	}
}

// TestModelFlagHelpNamesEveryPreset keeps --model's help in step with the presets.
func TestModelFlagHelpNamesEveryPreset(t *testing.T) {
	f, _ := reflect.TypeFor[modelFlags]().FieldByName("Model")
	help := f.Tag.Get("help")
	for _, name := range models.PresetNames() {
		if !strings.Contains(help, name) {
			t.Errorf("--model help %q does not name preset %s", help, name)
		}
	}
	if def := f.Tag.Get("default"); def != models.DefaultPreset {
		t.Errorf("--model defaults to %q, models.DefaultPreset is %q", def, models.DefaultPreset)
	}
}

func TestBenchStepCommand(t *testing.T) {
	var out, errb bytes.Buffer
	rc := run([]string{"bench", "step", "--model", "gpt-tiny", "--layers", "1", "--width", "32", "--heads", "2",
		"--seq", "16", "--batch", "2", "--steps", "1", "--warmup", "0", "--threads", "1", "--json"}, &out, &errb)
	if rc != 0 {
		t.Fatalf("exit %d: %s", rc, errb.String())
	}
	var rep struct {
		Model   models.Config `json:"model"`
		StepMS  float64       `json:"step_ms"`
		Backend string        `json:"backend"`
	}
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil || rep.Model.Width != 32 || rep.StepMS <= 0 || !strings.HasPrefix(rep.Backend, "cpu/") {
		t.Fatalf("report %q: %v", out.String(), err)
	}
	errb.Reset()
	if rc := run([]string{"bench", "step", "--heads", "5"}, &out, &errb); rc != 2 || !strings.Contains(errb.String(), "not divisible by 5 heads") {
		t.Fatalf("bad heads: exit %d, %q", rc, errb.String())
	}
	errb.Reset()
	if rc := run([]string{"bench", "step", "--blas", "mkl"}, &out, &errb); rc != 1 || !strings.Contains(errb.String(), `unknown BLAS "mkl"`) {
		t.Fatalf("bad BLAS: exit %d, %q", rc, errb.String())
	}
}

func TestCutFlags(t *testing.T) {
	cfg := models.Config{Kind: "gpt", Vocab: 256, Layers: 10, Width: 64, Heads: 4, Seq: 32}
	for _, c := range []struct {
		f      cutFlags
		stages int
		want   []int
		err    string
	}{
		{cutFlags{Balance: "uniform"}, 4, []int{2, 2, 3, 3}, ""},
		{cutFlags{LayersPerStage: "3,3,2,2", Balance: "uniform"}, 4, []int{3, 3, 2, 2}, ""},
		{cutFlags{LayersPerStage: "3,3,4"}, 4, nil, "names 3 stages, but the pipeline has 4"},
		{cutFlags{LayersPerStage: "3,3,2,1"}, 4, nil, "adds up to 9, but the model has 10 layers"},
		{cutFlags{Balance: "uniform"}, 11, nil, "more stages than layers"},
		{cutFlags{Balance: "memory"}, 2, nil, `--balance: balance "memory"`},
	} {
		got, err := c.f.cut(cfg, c.stages)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%+v into %d: error %v, want %q", c.f, c.stages, err, c.err)
			}
			continue
		}
		if err != nil || !slices.Equal(got, c.want) {
			t.Errorf("%+v into %d: %v, %v; want %v", c.f, c.stages, got, err, c.want)
		}
	}
}
