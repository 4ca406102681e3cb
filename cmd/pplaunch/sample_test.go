package main

import (
	"bytes"
	"os/exec"
	"regexp"
	"strings"
	"testing"
)

// sampleLine finds the text after "sample ...: " on rank 0's lines.
var sampleLine = regexp.MustCompile(`(?m)^\[rank 0\] sample (?:after step \d+|from \S+ \(step \d+, seed \d+\)): (.*)$`)

// TestSampleFromCheckpointMatchesTrain: the sample train prints at its end
// is the one `pplaunch sample` generates from its checkpoint with the same
// seed and prompt, on one rank and through a two-stage pipeline.
func TestSampleFromCheckpointMatchesTrain(t *testing.T) {
	root := t.TempDir()
	gen := []string{"--prompt", "ROMEO:", "--sample-tokens", "24", "--temperature", "0.9", "--top-k", "20"}
	r := runJob(t, 2, 0, nil, append(append([]string{}, tinyModel...), append([]string{"--checkpoint-dir", root, "--seed", "3"}, gen...)...)...)
	mustSucceed(t, r, "train")
	m := sampleLine.FindAllStringSubmatch(r.out, -1)
	if len(m) != 1 {
		t.Fatalf("%d sample lines, want 1:\n%s", len(m), r.out)
	}
	want := m[0][1]
	if !strings.HasPrefix(want, `"ROMEO:" → "`) {
		t.Fatalf("sample %s: want the prompt, then the text", want)
	}
	for _, n := range []string{"1", "2"} {
		var out, errb bytes.Buffer
		cmd := exec.Command(binary(t), append([]string{"--nproc", n, "sample", "--from", root}, gen...)...)
		cmd.Stdout, cmd.Stderr = &out, &errb
		if err := cmd.Run(); err != nil {
			t.Fatalf("--nproc %s sample: %v\n%s%s", n, err, out.String(), errb.String())
		}
		got := sampleLine.FindStringSubmatch(out.String())
		if got == nil || got[1] != want {
			t.Errorf("--nproc %s sample --from the checkpoint: %q, train printed %q\n%s", n, got, want, out.String())
		}
	}
	// Another seed, another text.
	out, err := exec.Command(binary(t), append([]string{"sample", "--from", root, "--seed", "4"}, gen...)...).CombinedOutput()
	if got := sampleLine.FindStringSubmatch(string(out)); err != nil || got == nil || got[1] == want {
		t.Errorf("sample --seed 4: %v %q, want a text other than %q\n%s", err, got, want, out)
	}
}

// Bad sample flags and checkpoints are one message and exit code 2.
func TestSampleBadFlags(t *testing.T) {
	root := t.TempDir()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"sample", "--from", root}, "no complete checkpoint"},
		{[]string{"sample"}, "--from"},
		{[]string{"train", "--temperature", "-1", "--steps", "1"}, "--temperature -1"},
	} {
		out, err := exec.Command(binary(t), tc.args...).CombinedOutput()
		if code := exitCode(t, err); code != 2 || !strings.Contains(string(out), tc.want) {
			t.Errorf("%v: exit %d, want 2 with %q:\n%s", tc.args, code, tc.want, out)
		}
	}
}
