package faults

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// refusedFlag is a case the agent refuses before any rank starts: exit 2 and
// one line saying what.
func refusedFlag(name string, fast bool, args []string, want string) fcase {
	return fcase{name: "flags/" + name, fast: fast, args: append(steps(2), args...), code: 2,
		want: []string{`(?m)^pplaunch: train: ` + want}, notWant: []string{`\[rank 0\]`}}
}

// writeData writes a --data file of the given bytes into the case's
// directory and points path at it.
func dataFile(b []byte) func(*testing.T, *env) {
	return func(t *testing.T, e *env) {
		if err := os.WriteFile(filepath.Join(e.dir, "data.txt"), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// mismatch runs two agents on loopback, one rank each, node 1 with flags
// more: its rank refuses them naming the flag and both values.
func mismatch(name string, fast bool, more []string, want string) fcase {
	return fcase{name: "mismatch/" + name, fast: fast, nodes: 2, nproc: 1, args: steps(3), node1: more,
		env:  []string{"PPLAUNCH_TOKEN=fault-suite-secret"},
		code: 1, want: []string{rootCause(1, "failed: "), want + `: start every node with the same training flags`}}
}

var flagCases = []fcase{
	refusedFlag("lr-nan", true, []string{"--lr", "nan"}, `--lr NaN: want a finite number`),
	refusedFlag("lr-inf", false, []string{"--lr", "inf"}, `--lr \+Inf: want a finite number`),
	refusedFlag("min-lr-nan", false, []string{"--min-lr", "nan"}, `--min-lr NaN: want a finite number`),
	refusedFlag("clip-nan", false, []string{"--clip", "nan"}, `--clip NaN: want a finite number`),
	refusedFlag("weight-decay-inf", false, []string{"--weight-decay", "inf"}, `--weight-decay \+Inf: want a finite number`),
	refusedFlag("steps-negative", false, []string{"--steps", "-1"}, `--steps -1 must not be negative`),
	refusedFlag("schedule-unknown", false, []string{"--schedule", "bogus"}, `--schedule "bogus": want one of`),
	refusedFlag("pp-does-not-fit", false, []string{"--pp", "3"}, `--pp 3 needs at least 3 ranks, but the world has 2`),
	refusedFlag("resume-without-dir", false, []string{"--resume"}, `--checkpoint-every, --overwrite and --resume need --checkpoint-dir`),
	refusedFlag("data-missing", true, []string{"--data", "/nonexistent/corpus.txt"}, `--data /nonexistent/corpus.txt`),
	{name: "flags/data-too-short", args: append(steps(2), "--data", "data.txt"), setup: dataFile([]byte("abc")),
		code: 2, want: []string{`--data data.txt: the training split has \d+ bytes, too few for --seq 16`}, notWant: []string{`\[rank 0\]`}},
	{name: "flags/data-empty-directory", args: append(steps(2), "--data", "corpus"),
		setup: func(t *testing.T, e *env) {
			if err := os.Mkdir(filepath.Join(e.dir, "corpus"), 0o755); err != nil {
				t.Fatal(err)
			}
		},
		code: 2, want: []string{`--data corpus: corpus corpus: no regular files under the directory`}, notWant: []string{`\[rank 0\]`}},
	{name: "flags/init-from-corrupt", args: append(steps(2), "--init-from", "w.safetensors"),
		setup: func(t *testing.T, e *env) {
			if err := os.WriteFile(filepath.Join(e.dir, "w.safetensors"), []byte("\xff\xff\xff\xff\xff\xff\xff\x7fnot a header"), 0o644); err != nil {
				t.Fatal(err)
			}
		},
		code: 1, want: []string{rootCause(anyRank, "failed: "), `--init-from w\.safetensors: .*safetensors: header length \d+ exceeds the limit`}},
	mismatch("lr", true, []string{"--lr", "0.01"}, `--lr 0\.01 on rank 1 \(node 1\), 0\.003 on rank 0`),
	mismatch("seed", false, []string{"--seed", "2"}, `--seed 2 on rank 1 \(node 1\), 1 on rank 0`),
	mismatch("steps", false, []string{"--steps", "5"}, `--steps 5 on rank 1 \(node 1\), 3 on rank 0`),
	mismatch("layers-per-stage", false, []string{"--layers-per-stage", "3,1"}, `--layers-per-stage 3,1 on rank 1 \(node 1\), 2,2 on rank 0`),
	mismatch("schedule", false, []string{"--schedule", "gpipe"}, `--schedule gpipe on rank 1 \(node 1\), 1f1b on rank 0`),
	{name: "mismatch/direct-lr", direct: true, nproc: 2, args: steps(3), node1: []string{"--lr", "0.01"}, timeout: 5 * time.Second,
		code: 1, want: []string{`rank 1: .*--lr 0\.01 on rank 1 \(node 0\), 0\.003 on rank 0: start every node with the same training flags`}},
	{name: "mismatch/none", nodes: 2, nproc: 1, args: steps(3), env: []string{"PPLAUNCH_TOKEN=fault-suite-secret"}, code: 0,
		notWant: []string{`start every node with the same training flags`}},
}
