package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/pplaunch/pplaunch/models"
)

func TestBenchStepCommand(t *testing.T) {
	var out, errb bytes.Buffer
	rc := run([]string{"bench", "step", "--model", "gpt-tiny", "--layers", "1", "--width", "32", "--heads", "2",
		"--seq", "16", "--batch", "2", "--steps", "1", "--warmup", "0", "--threads", "1", "--json"}, &out, &errb)
	if rc != 0 {
		t.Fatalf("exit %d: %s", rc, errb.String())
	}
	var rep struct {
		Model   models.Config `json:"model"`
		StepMS  float64       `json:"step_ms"`
		Backend string        `json:"backend"`
	}
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil || rep.Model.Width != 32 || rep.StepMS <= 0 || !strings.HasPrefix(rep.Backend, "cpu/") {
		t.Fatalf("report %q: %v", out.String(), err)
	}
	errb.Reset()
	if rc := run([]string{"bench", "step", "--heads", "5"}, &out, &errb); rc != 2 || !strings.Contains(errb.String(), "not divisible by 5 heads") {
		t.Fatalf("bad heads: exit %d, %q", rc, errb.String())
	}
	errb.Reset()
	if rc := run([]string{"bench", "step", "--blas", "mkl"}, &out, &errb); rc != 1 || !strings.Contains(errb.String(), `unknown BLAS "mkl"`) {
		t.Fatalf("bad BLAS: exit %d, %q", rc, errb.String())
	}
}
