package main

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/alexflint/go-arg"

	"github.com/pplaunch/pplaunch/models/checkpoint"
)

// parseCheckpoint parses argv the way main does once `Checkpoint *checkpointCmd` is
// wired into its cli struct.
func parseCheckpoint(t *testing.T, argv ...string) (*checkpointCmd, error) {
	t.Helper()
	var c struct {
		Checkpoint *checkpointCmd `arg:"subcommand:checkpoint"`
	}
	p, err := arg.NewParser(arg.Config{Program: "pplaunch"}, &c)
	if err != nil {
		t.Fatal(err)
	}
	err = p.Parse(argv)
	return c.Checkpoint, err
}

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

func TestCheckpointCompareCLI(t *testing.T) {
	root := t.TempDir()
	one, two, other := filepath.Join(root, "one"), filepath.Join(root, "two"), filepath.Join(root, "other")
	saveCkpt(t, one, 0.25, []string{"wte", "h.0.w", "h.0.b"})
	saveCkpt(t, two, 0.25, []string{"wte"}, []string{"h.0.w", "h.0.b"})
	saveCkpt(t, other, 0.2500001, []string{"wte", "h.0.w"}, []string{"h.0.b"})

	run := func(argv ...string) (string, error) {
		c, err := parseCheckpoint(t, argv...)
		if err != nil {
			t.Fatalf("parse %v: %v", argv, err)
		}
		var out bytes.Buffer
		err = c.run(context.Background(), &out, &out)
		return out.String(), err
	}

	out, err := run("checkpoint", "compare", one, two)
	if err != nil {
		t.Fatalf("same parameters, 1 vs 2 stages: %v\n%s", err, out)
	}
	if !strings.Contains(out, "3 tensors: 3 match, 0 differ") || !strings.Contains(out, "param/wte") {
		t.Fatalf("output:\n%s", out)
	}

	out, err = run("checkpoint", "compare", one, other)
	if err == nil || !strings.Contains(err.Error(), "1 of 3 tensors differ") {
		t.Fatalf("exact compare of differing checkpoints: err %v\n%s", err, out)
	}
	if !strings.Contains(out, "param/h.0.b") || !strings.Contains(out, "DIFFERS: 1 elements outside tolerance") {
		t.Fatalf("output does not name the differing tensor:\n%s", out)
	}

	t.Logf("exact compare output:\n%s", out)

	out, err = run("checkpoint", "compare", one, other, "--rtol", "1e-5")
	if err != nil {
		t.Fatalf("--rtol 1e-5: %v\n%s", err, out)
	}

	if _, err := run("checkpoint", "compare", one, filepath.Join(root, "missing")); err == nil || !strings.Contains(err.Error(), "missing") {
		t.Fatalf("missing checkpoint: %v", err)
	}
	if _, err := run("checkpoint", "compare", one, two, "--atol", "-1"); err == nil || !strings.Contains(err.Error(), "--atol") {
		t.Fatalf("negative tolerance: %v", err)
	}
	if _, err := parseCheckpoint(t, "checkpoint", "compare", one); err == nil {
		t.Fatal("one directory accepted")
	}
	c, err := parseCheckpoint(t, "checkpoint")
	if err != nil {
		t.Fatal(err)
	}
	if err := c.run(context.Background(), &bytes.Buffer{}, &bytes.Buffer{}); err == nil {
		t.Fatal("no subcommand accepted")
	}
}
