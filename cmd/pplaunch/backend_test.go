package main

import (
	"bytes"
	"io"
	"strings"
	"testing"

	"github.com/pplaunch/pplaunch/collective"
	"github.com/pplaunch/pplaunch/contract"
	"github.com/pplaunch/pplaunch/launch"
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

// TestResolveBackend: a rank takes its agent's choice from the environment
// (refusing one that is not a backend) without asking the machine; the
// agent chooses, prints what auto chose and passes the choice on.
func TestResolveBackend(t *testing.T) {
	for _, tc := range []struct {
		name, flag, device string
		env                map[string]string
		want, printed, err string
	}{
		{"rank takes the agent's", "auto", "cuda", map[string]string{contract.EnvBackend: "nccl", contract.EnvRole: contract.RoleRank}, "nccl", "", ""},
		{"rank refuses a stranger", "tcp", "cpu", map[string]string{contract.EnvBackend: "gloo", contract.EnvRole: contract.RoleRank}, "", "", `PPLAUNCH_BACKEND="gloo": want tcp or nccl`},
		{"agent: tcp", "tcp", "cuda", nil, "tcp", "", ""},
		{"agent: auto on the cpu", "auto", "cpu", nil, "tcp", "pplaunch: backend tcp (auto: NCCL moves GPU tensors and this run computes on the cpu)\n", ""},
		{"agent: nccl on the cpu", "nccl", "cpu", nil, "", "", "--backend nccl: NCCL moves GPU tensors and this run computes on the cpu (use --device cuda, or --backend tcp)"},
		{"rank without an agent chooses, silently", "auto", "cpu", map[string]string{contract.EnvRole: contract.RoleRank}, "tcp", "", ""},
	} {
		set := map[string]string{}
		var stderr bytes.Buffer
		got, err := resolveBackend(tc.flag, tc.device, true, launch.Flags{}, func(k string) string { return tc.env[k] },
			func(k, v string) error { set[k] = v; return nil }, &stderr)
		switch {
		case tc.err != "":
			if err == nil || err.Error() != tc.err {
				t.Errorf("%s: %q, %v; want error %q", tc.name, got, err, tc.err)
			}
		case err != nil || got != tc.want || stderr.String() != tc.printed:
			t.Errorf("%s: %q, %v, printed %q; want %q, printed %q", tc.name, got, err, stderr.String(), tc.want, tc.printed)
		case tc.env[contract.EnvBackend] == "" && set[contract.EnvBackend] != tc.want:
			t.Errorf("%s: passed %q to the ranks, want %q", tc.name, set[contract.EnvBackend], tc.want)
		}
	}
	if _, err := resolveBackend("tcp", "cpu", true, launch.Flags{}, func(string) string { return "" }, nil, io.Discard); err == nil {
		t.Error("no setenv: no error")
	}
}
