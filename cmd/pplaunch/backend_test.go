package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/pplaunch/pplaunch/collective"
)

// TestBackendNCCLRefusedBeforeStart: where NCCL cannot run (here: no GPU, or
// for train the host tensors), --backend nccl is one message and exit 2,
// before any rank starts; auto says it chose tcp and runs.
func TestBackendNCCLRefusedBeforeStart(t *testing.T) {
	if f := collective.ProbeBackend("nccl", "cuda", true, 2, func(string) string { return "" }); f.NCCLUnusable() == "" {
		t.Skip("NCCL and a GPU are here: bench/gpu/check.sh runs --backend nccl")
	}
	for _, args := range [][]string{
		{"--nproc", "2", "bench", "p2p", "--backend", "nccl", "--max", "8"},
		{"--nproc", "2", "bench", "allreduce", "--backend", "nccl", "--max", "8"},
		{"--nproc", "2", "train", "--backend", "nccl", "--steps", "1"},
	} {
		var out, errb bytes.Buffer
		cmd := pplaunch(t, nil, append([]string{"--no-tag"}, args...)...)
		cmd.Stdout, cmd.Stderr = &out, &errb
		code := exitCode(t, cmd.Run())
		msg := strings.TrimSpace(errb.String())
		if code != 2 || !strings.Contains(msg, "--backend nccl: ") || strings.Count(msg, "\n") != 0 || out.Len() != 0 {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 2 and one line", args, code, out.String(), msg)
		}
	}
	var out, errb bytes.Buffer
	cmd := pplaunch(t, nil, "--no-tag", "--nproc", "2", "bench", "p2p", "--backend", "auto", "--max", "64", "--iters", "2", "--reps", "1", "--no-ceiling", "--json")
	cmd.Stdout, cmd.Stderr = &out, &errb
	if code := exitCode(t, cmd.Run()); code != 0 || !strings.Contains(errb.String(), "pplaunch: backend tcp (auto: ") || !strings.Contains(out.String(), `"bytes":64`) {
		t.Errorf("auto: exit %d\nstdout %s\nstderr %s", code, out.String(), errb.String())
	}
}
