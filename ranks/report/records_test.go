package report

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pplaunch/pplaunch/contract"
	"github.com/pplaunch/pplaunch/ranks"
)

// TestJSONLinesAppend: --metrics starts afresh, except in an elastic job's
// re-formed world (a restart of a job with an elastic base), which goes on
// with the records of the worlds before it.
func TestJSONLinesAppend(t *testing.T) {
	for _, tc := range []struct {
		name          string
		base, restart string
		lines         int
	}{
		{"first run", "", "", 1},
		{"restart, not elastic", "", "2", 1},
		{"elastic, first world", "4", "0", 1},
		{"elastic, re-formed", "4", "1", 2},
	} {
		path := filepath.Join(t.TempDir(), "m.jsonl")
		if err := os.WriteFile(path, []byte(`{"record":"step","step":1}`+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		env := map[string]string{contract.EnvElasticBase: tc.base, contract.EnvRestartCount: tc.restart}
		j, err := openJSONLines(Config{Metrics: path, Getenv: func(k string) string { return env[k] }})
		if err != nil {
			t.Fatal(err)
		}
		j.write(ranks.EventRecord{Step: 2})
		if err := j.finish(); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Count(string(b), "\n"); got != tc.lines {
			t.Errorf("%s: %d lines, want %d:\n%s", tc.name, got, tc.lines, b)
		}
	}
}

// TestRelayoutRecord: a re-layout is a console line and a --metrics record
// with the step training resumed from.
func TestRelayoutRecord(t *testing.T) {
	path := filepath.Join(t.TempDir(), "m.jsonl")
	var buf strings.Builder
	r, err := Open(Config{Train: ranks.TrainConfig{Steps: 4, Schedule: "1f1b"}, World: 1, Compute: "cpu", Out: &buf, Metrics: path, Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	rec := &ranks.RelayoutRecord{Record: ranks.RecordRelayout, FromNodes: 2, ToNodes: 1, From: ranks.Shape{PP: 2, DP: 2, Micro: 4}, To: ranks.Shape{PP: 2, DP: 1, Micro: 8}}
	r.Relayout(rec, 6)
	if err := r.lines.finish(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"step":6`) || !strings.Contains(buf.String(), "re-layout: 2 → 1 nodes, pp 2 dp 2 → pp 2 dp 1, 4 → 8 micro-batches per replica (global batch 8 micro-batches), from checkpoint step 6\n") {
		t.Errorf("record %s\nconsole:\n%s", b, buf.String())
	}
}
