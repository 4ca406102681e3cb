package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestBenchStepDevice: an unknown device, or CUDA where the libraries, the
// driver or a GPU are missing, is one message and exit 2 before anything runs;
// the CPU runs a step.
func TestBenchStepDevice(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run([]string{"bench", "step", "--model", "mlp-tiny", "--device", "tpu"}, &out, &errb); code != 2 ||
		!strings.Contains(errb.String(), `device "tpu": want cpu or cuda`) {
		t.Fatalf("--device tpu: exit %d, stderr %q", code, errb.String())
	}
	out.Reset()
	errb.Reset()
	code := run([]string{"bench", "step", "--model", "mlp-tiny", "--batch", "1", "--steps", "1", "--warmup", "0", "--device", "cuda"}, &out, &errb)
	switch {
	case code == 0:
		t.Skip("a GPU is present here: the missing-GPU path cannot be exercised")
	case code != 2 || !strings.HasPrefix(errb.String(), "pplaunch: bench step --device cuda: cuda backend: ") ||
		strings.Count(errb.String(), "pplaunch:") != 1 || out.Len() != 0:
		t.Fatalf("--device cuda without a GPU: exit %d, stdout %q, stderr %q, want exit 2 and one message from the cuda backend", code, out.String(), errb.String())
	}
	t.Logf("without a GPU: %s", errb.String())
	out.Reset()
	errb.Reset()
	if code := run([]string{"bench", "step", "--model", "mlp-tiny", "--batch", "1", "--steps", "1", "--warmup", "0", "--device", "cpu", "--blas", "gonum"}, &out, &errb); code != 0 ||
		!strings.Contains(out.String(), "cpu/gonum") {
		t.Fatalf("--device cpu: exit %d, stdout %q, stderr %q", code, out.String(), errb.String())
	}
}
