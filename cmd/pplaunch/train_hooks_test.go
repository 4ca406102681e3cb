package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/alexflint/go-arg"

	"github.com/pplaunch/pplaunch/contract"
	"github.com/pplaunch/pplaunch/models/checkpoint"
)

// parseCLI parses argv as main's run does.
func parseCLI(t *testing.T, argv []string) cli {
	t.Helper()
	var c cli
	p, err := arg.NewParser(arg.Config{Program: "pplaunch"}, &c)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Parse(torchrunNames(argv)); err != nil {
		t.Fatalf("parse %q: %v", argv, err)
	}
	return c
}

// TestTrainAgentChecksFlags: as the agent, train refuses a bad configuration
// for the world it would launch with exit code 2 and one line naming the
// flag, before any rank starts. Were a rank started, it would be this test
// binary run as pplaunch (PPLAUNCH_TEST_MAIN), failing on every rank: more
// lines, and another exit code.
func TestTrainAgentChecksFlags(t *testing.T) {
	t.Setenv("PPLAUNCH_TEST_MAIN", "1")
	t.Setenv(contract.EnvRole, "")
	missing := filepath.Join(t.TempDir(), "missing.txt")
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	ckpt := filepath.Join(t.TempDir(), "ckpt")
	saveCkpt(t, ckpt, 0, []string{"wte"}) // a step-2 checkpoint
	shard := filepath.Join(checkpoint.StepDir(ckpt, 2), checkpoint.ShardFile(0, 1))
	for _, tc := range []struct {
		argv []string
		want string
	}{
		{[]string{"--nproc", "2", "train", "--resume", "--checkpoint-dir", missing}, "--resume: --checkpoint-dir " + missing + " does not exist"},
		{[]string{"--nproc", "2", "train", "--resume", "--checkpoint-dir", ckpt}, "the newest checkpoint under " + ckpt + " is at step 2, already past --steps 1"},
		{[]string{"--nproc", "2", "train", "--init-from", shard}, "is a pplaunch checkpoint"},
		{[]string{"--nproc", "2", "train", "--init-from", ckpt}, "--init-from " + ckpt + " is a directory"},
		{[]string{"--nproc", "4", "train", "--schedule", "nope"}, `--schedule "nope": want one of`},
		{[]string{"--nproc", "4", "train", "--microbatches", "0"}, "--microbatches 0 must be at least 1"},
		{[]string{"--nproc", "4", "train", "--pp", "3"}, "--pp 3 does not divide the world of 4 ranks"},
		{[]string{"--nproc", "4", "train", "--pp", "3", "--dp", "1"}, "--pp 3 × --dp 1 = 3 ranks, but the world has 4"},
		{[]string{"--nproc", "4", "train", "--dp", "3"}, "--dp 3 does not divide the world of 4 ranks"},
		{[]string{"--nproc", "4", "train", "--dp", "2", "--microbatches", "6"}, "--dp 2 needs --microbatches a power of two (got 6)"},
		{[]string{"--nproc", "4", "train", "--layers-per-stage", "1,1,1"}, `--layers-per-stage: layers per stage "1,1,1" adds up to 3, but the model has 4 layers`},
		{[]string{"--nproc", "2", "train", "--layers-per-stage", "1,1,2"}, "--layers-per-stage 1,1,2 names 3 stages, but the pipeline has 2"},
		{[]string{"--nproc", "2", "train", "--schedule", "interleaved", "--layers", "3"}, "--schedule interleaved on --pp 2 runs 4 stages (2 per rank), but the model has 3 blocks: each stage needs one; give --layers 4 or more"},
		{[]string{"--nproc", "2", "train", "--data", missing}, "--data " + missing},
		{[]string{"--nproc", "2", "train", "--init-from", missing}, "--init-from " + missing + " does not exist"},
		{[]string{"--nproc", "2", "train", "--resume"}, "--resume need --checkpoint-dir"},
		{[]string{"--nproc", "2", "train", "--optimizer", "lion"}, `--optimizer: optimizer "lion"`},
		{[]string{"--nproc", "2", "train", "--heads", "5"}, "head"},
		{[]string{"--nproc", "2", "train", "--device", "tpu"}, `--device "tpu": want cpu or cuda`},
		{[]string{"--nproc", "2", "train", "--tf32"}, "--tf32 is for --device cuda"},
		{[]string{"--nproc", "2", "train", "--gelu", "erf"}, `--gelu "erf": want tanh or exact`},
		{[]string{"--nproc", "2", "train", "--vocab", "-3"}, "--vocab -3: want a positive number"},
		{[]string{"--nproc", "2", "train", "--metrics", filepath.Join(missing, "m.jsonl")}, "--metrics " + filepath.Join(missing, "m.jsonl") + ": stat " + missing},
		{[]string{"--nproc", "2", "train", "--trace-svg", filepath.Join(file, "t.svg")}, file + " is not a directory"},
		// Two nodes: the world is known at the rendezvous only; the rest is checked.
		{[]string{"--nnodes", "2", "--rdzv-endpoint", "127.0.0.1:1", "--nproc", "2", "train", "--pp", "2", "--virtual", "3"}, "--schedule 1f1b with --pp 2"},
		{[]string{"--nnodes", "2", "--rdzv-endpoint", "127.0.0.1:1", "--nproc", "2", "train", "--microbatch-size", "0"}, "--microbatch-size 0"},
	} {
		// A short job, should the check let it through.
		tc.argv = append(tc.argv, "--steps", "1")
		c := parseCLI(t, tc.argv)
		var out, errb bytes.Buffer
		code := c.Train.run(c.Flags, tc.argv, &out, &errb)
		lines := strings.Split(strings.TrimSpace(errb.String()), "\n")
		if code != 2 || len(lines) != 1 || !strings.HasPrefix(lines[0], "pplaunch: train: ") || !strings.Contains(lines[0], tc.want) {
			t.Errorf("%q: exit %d, want 2 and one line saying %q; stderr:\n%s\nstdout:\n%s", tc.argv, code, tc.want, errb.String(), out.String())
		}
	}
}

// TestTrainPrecheckPasses: a good configuration passes the agent's check,
// and inside a rank or under --direct the agent's check is skipped (the
// rank checks with the world it is in).
func TestTrainPrecheckPasses(t *testing.T) {
	t.Setenv(contract.EnvRole, "")
	for _, argv := range [][]string{
		{"--nproc", "4", "train"},
		{"--nproc", "4", "train", "--dp", "2", "--schedule", "interleaved", "--layers-per-stage", "1,1,1,1"},
		{"--nproc", "2", "train", "--pp", "1", "--dp", "2"},
		{"--nnodes", "2", "--rdzv-endpoint", "127.0.0.1:1", "--nproc", "2", "train", "--dp", "3"},
		{"--direct", "train", "--pp", "3"},
		{"--nproc", "2", "train", "--metrics", filepath.Join(t.TempDir(), "m.jsonl"), "--trace", filepath.Join(t.TempDir(), "t.json")},
	} {
		c := parseCLI(t, argv)
		if err := c.Train.precheck(c.Flags, os.Getenv); err != nil {
			t.Errorf("%q: %v", argv, err)
		}
	}
	c := parseCLI(t, []string{"--nproc", "4", "train", "--pp", "3"})
	rank := func(k string) string {
		if k == contract.EnvRole {
			return contract.RoleRank
		}
		return ""
	}
	if err := c.Train.precheck(c.Flags, rank); err != nil {
		t.Errorf("in a rank: %v, want no agent check", err)
	}
	if err := c.Train.precheck(c.Flags, os.Getenv); err == nil {
		t.Error("--pp 3 on 4 ranks passed the agent's check")
	}
}
