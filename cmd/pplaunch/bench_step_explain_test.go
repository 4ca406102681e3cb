package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestBenchStepExplain: --explain is the roofline of a CUDA step: with
// --device cpu a usage error (exit 2) that says what to give; with --device
// cuda the table, and the measured step where a GPU opens or the word that
// nothing ran on a GPU where none does.
func TestBenchStepExplain(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run([]string{"bench", "step", "--model", "gpt-tiny", "--explain"}, &out, &errb); code != 2 ||
		!strings.Contains(errb.String(), "give --device cuda") {
		t.Fatalf("--explain on cpu: exit %d, stderr %q", code, errb.String())
	}
	out.Reset()
	errb.Reset()
	code := run([]string{"bench", "step", "--model", "gpt-tiny", "--batch", "2", "--steps", "1", "--warmup", "0", "--device", "cuda", "--explain"}, &out, &errb)
	if code != 0 {
		t.Fatalf("--explain on cuda: exit %d, stderr %q", code, errb.String())
	}
	s := out.String()
	for _, want := range []string{"roofline  NVIDIA H200 SXM", "GEMMs (linears, head)", "attention", "AdamW", "total", "MFU", "also      bf16"} {
		if !strings.Contains(s, want) {
			t.Fatalf("--explain output lacks %q:\n%s", want, s)
		}
	}
	if !strings.Contains(s, "measured  nothing ran on a GPU: cuda backend: ") && !strings.Contains(s, "ms per step") {
		t.Fatalf("--explain says neither what ran nor that nothing did:\n%s", s)
	}
	t.Logf("%s", s)
}
