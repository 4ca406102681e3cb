package main

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pplaunch/pplaunch/models/checkpoint"
)

func saveCkpt(t *testing.T, dir string, bias float32, stages ...[]string) {
	t.Helper()
	vals := map[string][]float32{"wte": {1, 2, 3, 4}, "h.0.w": {0.5, -0.5}, "h.0.b": {bias}}
	shapes := map[string][]int{"wte": {2, 2}, "h.0.w": {1, 2}, "h.0.b": {1}}
	var shards []checkpoint.Shard
	for _, names := range stages {
		var sh checkpoint.Shard
		for _, n := range names {
			sh.Params = append(sh.Params, checkpoint.Tensor{Name: n, Shape: shapes[n], Data: vals[n]})
		}
		shards = append(shards, sh)
	}
	m := checkpoint.Manifest{Step: 2, Model: json.RawMessage(`{"layers":1}`), Optimizer: "sgd"}
	if err := checkpoint.Save(checkpoint.StepDir(dir, 2), m, shards); err != nil {
		t.Fatal(err)
	}
}

// TestCheckpointCompareCLI runs `pplaunch checkpoint compare` as main does:
// exit 0 only when every tensor matches, 1 naming the differences otherwise,
// 2 for bad usage.
func TestCheckpointCompareCLI(t *testing.T) {
	root := t.TempDir()
	one, two, other := filepath.Join(root, "one"), filepath.Join(root, "two"), filepath.Join(root, "other")
	saveCkpt(t, one, 0.25, []string{"wte", "h.0.w", "h.0.b"})
	saveCkpt(t, two, 0.25, []string{"wte"}, []string{"h.0.w", "h.0.b"})
	saveCkpt(t, other, 0.2500001, []string{"wte", "h.0.w"}, []string{"h.0.b"})

	pplaunch := func(argv ...string) (code int, stdout, stderr string) {
		var out, errb bytes.Buffer
		code = run(argv, &out, &errb)
		return code, out.String(), errb.String()
	}

	code, out, errs := pplaunch("checkpoint", "compare", one, two)
	if code != 0 {
		t.Fatalf("same parameters, 1 vs 2 stages: exit %d, %s\n%s", code, errs, out)
	}
	if !strings.Contains(out, "3 tensors: 3 match, 0 differ") || !strings.Contains(out, "param/wte") {
		t.Fatalf("output:\n%s", out)
	}

	code, out, errs = pplaunch("checkpoint", "compare", one, other)
	if code != 1 || !strings.Contains(errs, "1 of 3 tensors differ") {
		t.Fatalf("exact compare of differing checkpoints: exit %d, %s\n%s", code, errs, out)
	}
	if !strings.Contains(out, "param/h.0.b") || !strings.Contains(out, "DIFFERS: 1 elements outside tolerance") {
		t.Fatalf("output does not name the differing tensor:\n%s", out)
	}
	t.Logf("exact compare output:\n%s", out)

	if code, out, errs = pplaunch("checkpoint", "compare", one, other, "--rtol", "1e-5"); code != 0 {
		t.Fatalf("--rtol 1e-5: exit %d, %s\n%s", code, errs, out)
	}
	missing := filepath.Join(root, "missing")
	if code, _, errs = pplaunch("checkpoint", "compare", one, missing); code != 1 || !strings.Contains(errs, missing) {
		t.Fatalf("missing checkpoint: exit %d, %s", code, errs)
	}
	if code, _, errs = pplaunch("checkpoint", "compare", one, two, "--atol", "-1"); code != 2 || !strings.Contains(errs, "--atol") {
		t.Fatalf("negative tolerance: exit %d, %s", code, errs)
	}
	if code, _, errs = pplaunch("checkpoint", "compare", one); code != 2 || !strings.Contains(errs, "DIR2") {
		t.Fatalf("one directory: exit %d, %s", code, errs)
	}
	if code, _, errs = pplaunch("checkpoint"); code != 2 || !strings.Contains(errs, "compare      compare two checkpoints") {
		t.Fatalf("no subcommand: exit %d, %s", code, errs)
	}
}
