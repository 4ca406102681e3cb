package plan

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/pplaunch/pplaunch/models"
)

// TestQueryWriteProfile: plan --profile's answers and refusals, from the
// profile of a 4-block GPT on 2 ranks: the cut comparison (text and JSON),
// the search (JSON, and a budget nothing fits, which prints and then fails
// saying what to change), and each flag's check.
func TestQueryWriteProfile(t *testing.T) {
	for _, c := range []struct {
		name    string
		edit    func(q *Query)
		out     string // the start of the output
		wantErr string // "" passes
	}{
		{"cuts", func(q *Query) {}, "profile p.json: gpt, 4 layers, width 32, seq 16,", ""},
		{"cuts json", func(q *Query) { q.JSON = true }, `{"cuts":[{"name":"current",`, ""},
		{"search json", func(q *Query) { q.World, q.JSON = 4, true }, `{"world":4,"global_batch":`, ""},
		{"search fits", func(q *Query) { q.World, q.MemoryBudget = 8, "1MiB" }, "profile p.json:", ""},
		{"nothing fits", func(q *Query) { q.MemoryBudget = "1KiB" }, "profile p.json:",
			"plan: no layout fits the memory budget: raise --memory-budget, add ranks (--world), shard the optimizer state (--zero 1) or lower --global-batch"},
		{"nothing fits zero 1", func(q *Query) { q.MemoryBudget, q.Zero = "1KiB", 1 }, "profile p.json:",
			"plan: no layout fits the memory budget: raise --memory-budget, add ranks (--world) or lower --global-batch"},
		{"zero 2", func(q *Query) { q.World, q.Zero = 8, 2 }, "", "pipelines allow only stage 0 (off) or 1"},
		{"bad budget", func(q *Query) { q.MemoryBudget = "lots" }, "", "plan: --memory-budget "},
		{"top 0", func(q *Query) { q.World, q.Top = 8, 0 }, "", "plan: --world 8, --global-batch 32 and --top 0 must be at least 1"},
		{"fp8", func(q *Query) { q.Precision = "fp8" }, "", `plan: --precision "fp8": want fp32, tf32 or bf16`},
	} {
		q := defaultQuery()
		q.Profile = "p.json"
		c.edit(&q)
		var b bytes.Buffer
		err := q.WriteProfile(&b, readTestProfile(t))
		if c.wantErr == "" && err != nil || c.wantErr != "" && (err == nil || !strings.Contains(err.Error(), c.wantErr)) {
			t.Errorf("%s: error %v, want %q", c.name, err, c.wantErr)
		}
		if !strings.HasPrefix(b.String(), c.out) {
			t.Errorf("%s: printed\n%.200s\nwant it to start with %q", c.name, b.String(), c.out)
		}
	}
}

// TestQueryWriteProfileSearchJSON: the search's JSON holds every layout it
// predicted, with the world and global batch it searched.
func TestQueryWriteProfileSearchJSON(t *testing.T) {
	q := defaultQuery()
	q.Profile, q.World, q.GlobalBatch, q.JSON = "p.json", 4, 16, true
	var b bytes.Buffer
	if err := q.WriteProfile(&b, readTestProfile(t)); err != nil {
		t.Fatal(err)
	}
	var got struct {
		World       int   `json:"world"`
		GlobalBatch int   `json:"global_batch"`
		Layouts     []Row `json:"layouts"`
	}
	if err := json.Unmarshal(b.Bytes(), &got); err != nil || got.World != 4 || got.GlobalBatch != 16 || len(got.Layouts) == 0 {
		t.Errorf("%v: %+v", err, got)
	}
}

// TestCutModel: a profile cuts its own model as ProfileCut does, and
// refuses another model, naming both.
func TestCutModel(t *testing.T) {
	p := readTestProfile(t)
	own := models.Config{Kind: "gpt", Vocab: 256, Layers: 4, Width: 32, Heads: 2, Seq: 16}
	want, err := ProfileCut(p, 3)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name    string
		edit    func(c *models.Config)
		wantErr string
	}{
		{"own model", func(c *models.Config) {}, ""},
		{"width", func(c *models.Config) { c.Width = 64 }, "the profile measured a gpt of 4 layers, width 32, 2 heads, seq 16, vocab 256; this run's model is a gpt of 4 layers, width 64, 2 heads, seq 16, vocab 256: profile this model first (train --profile)"},
		{"vocab", func(c *models.Config) { c.Vocab = 512 }, "vocab 512: profile this model first"},
		{"kind", func(c *models.Config) { c.Kind = "mlp" }, "this run's model is a mlp of"},
	} {
		cfg := own
		c.edit(&cfg)
		got, err := p.CutModel(cfg, 3)
		switch {
		case c.wantErr == "" && (err != nil || !slices.Equal(got, want)):
			t.Errorf("%s: %v, %v; want %v", c.name, got, err, want)
		case c.wantErr != "" && (err == nil || !strings.Contains(err.Error(), c.wantErr)):
			t.Errorf("%s: %v, want %q", c.name, err, c.wantErr)
		}
	}
}
