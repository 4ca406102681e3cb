package runconfig

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pplaunch/pplaunch/models"
	"github.com/pplaunch/pplaunch/models/checkpoint"
	"github.com/pplaunch/pplaunch/ranks"
)

// TestCheckInitFrom: --init-from takes a readable file of weights, and
// refuses a missing path, a directory, and a pplaunch checkpoint's shard or
// directory (naming --resume).
func TestCheckInitFrom(t *testing.T) {
	dir := t.TempDir()
	weights := filepath.Join(dir, "model.safetensors")
	if err := os.WriteFile(weights, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	ckpt := filepath.Join(dir, "ckpt", "step-2")
	sh := checkpoint.Shard{Params: []checkpoint.Tensor{{Name: "wte", Shape: []int{1}, Data: []float32{1}}}}
	if err := checkpoint.Save(ckpt, checkpoint.Manifest{Step: 2, Model: json.RawMessage(`{}`), Optimizer: "sgd"}, []checkpoint.Shard{sh}); err != nil {
		t.Fatal(err)
	}
	shard := filepath.Join(ckpt, checkpoint.ShardFile(0, 1))
	missing := filepath.Join(dir, "missing")
	for _, c := range []struct {
		path, want string // want "" passes
	}{
		{"", ""},
		{weights, ""},
		{missing, "--init-from " + missing + " does not exist"},
		{dir, "--init-from " + dir + " is a directory: give a safetensors file of the whole model's weights"},
		{shard, "--init-from " + shard + " is a pplaunch checkpoint (" + ckpt + " holds its manifest), whose shards hold one stage each: to continue that run, give --resume --checkpoint-dir " + filepath.Dir(ckpt) + ";"},
		{ckpt, "--init-from " + ckpt + " is a pplaunch checkpoint"},
	} {
		err := CheckInitFrom(c.path)
		if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.HasPrefix(err.Error(), c.want)) {
			t.Errorf("CheckInitFrom(%q) = %v, want %q", c.path, err, c.want)
		}
	}
}

// TestCheckFiles: the corpus and the outputs' directories are checked; with
// the world's size unknown (0), what rank 0 writes is not.
func TestCheckFiles(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "missing")
	cfg := ranks.TrainConfig{Model: models.Config{Kind: "gpt", Vocab: 256, Layers: 2, Width: 32, Heads: 2, Seq: 16}}
	for _, c := range []struct {
		name    string
		data    string
		size    int
		outputs []Output
		want    string
	}{
		{"embedded corpus", "", 2, []Output{{"--metrics", filepath.Join(dir, "m.jsonl")}, {"--trace", ""}}, ""},
		{"missing corpus", missing, 2, nil, "--data " + missing},
		{"missing directory", "", 2, []Output{{"--metrics", filepath.Join(missing, "m.jsonl")}}, "--metrics " + filepath.Join(missing, "m.jsonl") + ": stat " + missing},
		{"file as directory", "", 2, []Output{{"--trace-svg", filepath.Join(file, "t.svg")}}, "--trace-svg " + filepath.Join(file, "t.svg") + ": " + file + " is not a directory"},
		{"world unknown", "", 0, []Output{{"--metrics", filepath.Join(missing, "m.jsonl")}}, ""},
	} {
		cfg.Data = c.data
		err := CheckFiles(cfg, c.size, c.outputs)
		if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.HasPrefix(err.Error(), c.want)) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
}

func TestWorldDP(t *testing.T) {
	for _, c := range []struct{ size, pp, dp, want int }{
		{8, 0, 0, 1}, {8, 2, 0, 4}, {8, 3, 0, 1}, {8, 2, 2, 2}, {8, 0, 4, 4}, {1, 1, 0, 1},
	} {
		if got := WorldDP(c.size, c.pp, c.dp); got != c.want {
			t.Errorf("WorldDP(%d, %d, %d) = %d, want %d", c.size, c.pp, c.dp, got, c.want)
		}
	}
}
