package runconfig

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/pplaunch/pplaunch/models"
	"github.com/pplaunch/pplaunch/plan"
)

// profileFile is a profile that train --profile wrote for a 4-block GPT
// (width 32, seq 16) on 2 ranks with 1F1B.
var profileFile = filepath.Join("..", "plan", "testdata", "profile_gpt4.json")

// readProfile reads the profile at path.
func readProfile(path string) (*plan.Profile, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return plan.ReadProfile(bytes.NewReader(b))
}

func TestModelFlags(t *testing.T) {
	for _, c := range []struct {
		f    ModelFlags
		want models.Config
		err  string
	}{
		{ModelFlags{Model: "gpt-small"}, models.Config{Kind: "gpt", Vocab: 256, Layers: 4, Width: 256, Heads: 4, Seq: 128}, ""},
		{ModelFlags{Model: "gpt-tiny", Layers: 2, Width: 64, Heads: 2, Seq: 32, Tied: true}, models.Config{Kind: "gpt", Vocab: 256, Layers: 2, Width: 64, Heads: 2, Seq: 32, Tied: true}, ""},
		{ModelFlags{Model: "gpt-xl"}, models.Config{}, `--model: unknown model "gpt-xl"`},
		{ModelFlags{Model: "gpt-tiny", Heads: 3}, models.Config{}, "width 128 is not divisible by 3 heads"},
		{ModelFlags{Model: "gpt-tiny", Seq: -1}, models.Config{}, "--seq -1"},
		{ModelFlags{Model: "gpt2", Vocab: 50257, Gelu: "exact"}, models.Config{Kind: "gpt", Vocab: 50257, Layers: 12, Width: 768, Heads: 12, Seq: 1024, Tied: true, Gelu: "exact"}, ""},
		{ModelFlags{Model: "gpt-tiny", Gelu: "tanh"}, models.Config{Kind: "gpt", Vocab: 256, Layers: 4, Width: 128, Heads: 4, Seq: 64}, ""},
		{ModelFlags{Model: "gpt-tiny", Gelu: "erf"}, models.Config{}, `--gelu "erf": want tanh or exact`},
		{ModelFlags{Model: "gpt-tiny", Vocab: -2}, models.Config{}, "--vocab -2: want a positive number"},
		{ModelFlags{Model: "gpt-tiny", Vocab: 1}, models.Config{}, "model vocab 1: want at least 2"},
	} {
		got, err := c.f.Config()
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
	f, _ := reflect.TypeFor[ModelFlags]().FieldByName("Model")
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

func TestCutFlags(t *testing.T) {
	cfg := models.Config{Kind: "gpt", Vocab: 256, Layers: 10, Width: 64, Heads: 4, Seq: 32}
	for _, c := range []struct {
		f      CutFlags
		stages int
		want   []int
		err    string
	}{
		{CutFlags{Balance: "uniform"}, 4, []int{2, 2, 3, 3}, ""},
		{CutFlags{LayersPerStage: "3,3,2,2", Balance: "uniform"}, 4, []int{3, 3, 2, 2}, ""},
		{CutFlags{LayersPerStage: "3,3,4"}, 4, nil, "names 3 stages, but the pipeline has 4"},
		{CutFlags{LayersPerStage: "3,3,2,1"}, 4, nil, "adds up to 9, but the model has 10 layers"},
		{CutFlags{Balance: "uniform"}, 11, nil, "more stages than layers"},
		{CutFlags{Balance: "memory"}, 2, nil, `--balance: balance "memory"`},
	} {
		got, err := c.f.Cut(cfg, c.stages, readProfile)
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

// TestBalanceProfile: --balance profile:FILE cuts by the profile's block
// times, and refuses a profile of another model.
func TestBalanceProfile(t *testing.T) {
	p, err := readProfile(profileFile)
	if err != nil {
		t.Fatal(err)
	}
	cfg := models.Config{Kind: "gpt", Vocab: 256, Layers: 4, Width: 32, Heads: 2, Seq: 16}
	f := CutFlags{Balance: "profile:" + profileFile}
	got, err := f.Cut(cfg, 3, readProfile)
	want, _ := plan.ProfileCut(p, 3)
	if err != nil || !slices.Equal(got, want) || len(got) != 3 {
		t.Errorf("cut %v, %v; want %v", got, err, want)
	}
	cfg.Width = 64
	if _, err := f.Cut(cfg, 2, readProfile); err == nil || !strings.Contains(err.Error(), "profile this model first") {
		t.Errorf("another model's profile: %v", err)
	}
	f.Balance = "profile:" + filepath.Join(t.TempDir(), "none.json")
	if _, err := f.Cut(cfg, 2, readProfile); err == nil || !strings.Contains(err.Error(), "--balance profile:") {
		t.Errorf("a missing profile: %v", err)
	}
}
