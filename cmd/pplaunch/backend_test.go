package main

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

// TestChooseBackend: the backend decision for every flag and situation.
func TestChooseBackend(t *testing.T) {
	ready := backendFacts{Device: "cuda", Stage: true, Ranks: 2, GPUs: 2, NCCL: 23203}
	with := func(f func(*backendFacts)) backendFacts { b := ready; f(&b); return b }
	noGPU := with(func(b *backendFacts) { b.GPUs, b.GPUErr = 0, errors.New("no CUDA device (cudaErrorNoDevice 100)") })
	noNCCL := with(func(b *backendFacts) { b.NCCL, b.NCCLErr = 0, errors.New("libnccl.so.2 not found") })
	shared := with(func(b *backendFacts) { b.Ranks, b.GPUs = 4, 1 })
	sharedOld := with(func(b *backendFacts) { b.Ranks, b.GPUs, b.NCCL, b.MultiRank = 2, 1, 22907, true })
	for _, tc := range []struct {
		name, flag string
		f          backendFacts
		choice     string
		note, err  string // substrings; "" for none
	}{
		{"tcp always", "tcp", noGPU, "tcp", "", ""},
		{"nccl ready", "nccl", ready, "nccl", "backend nccl (NCCL 2.32.3, 2 GPU(s))", ""},
		{"auto ready", "auto", ready, "nccl", "backend nccl", ""},
		{"nccl no GPU", "nccl", noGPU, "", "", "--backend nccl: no GPU: no CUDA device (cudaErrorNoDevice 100)"},
		{"auto no GPU", "auto", noGPU, "tcp", "backend tcp (auto: no GPU: no CUDA device", ""},
		{"nccl zero GPUs", "nccl", with(func(b *backendFacts) { b.GPUs = 0 }), "", "", "no GPU visible (check CUDA_VISIBLE_DEVICES)"},
		{"nccl missing library", "nccl", noNCCL, "", "", "--backend nccl: NCCL did not load: libnccl.so.2 not found"},
		{"auto missing library", "auto", noNCCL, "tcp", "auto: NCCL did not load", ""},
		{"nccl cpu tensors", "nccl", with(func(b *backendFacts) { b.Device = "cpu" }), "", "", "this run computes on the cpu (use --device cuda"},
		{"nccl stage loop", "nccl", with(func(b *backendFacts) { b.Stage = false }), "", "", "the stage loop does not hand device tensors to NCCL"},
		{"shared GPU not enabled", "nccl", shared, "", "", "4 ranks on 1 GPU(s): set NCCL_MULTI_RANK_GPU_ENABLE=1"},
		{"shared GPU enabled", "nccl", with(func(b *backendFacts) { b.Ranks, b.GPUs, b.MultiRank = 4, 1, true }), "nccl", "", ""},
		{"shared GPU old NCCL", "auto", sharedOld, "tcp", "NCCL 2.29.7 refuses two ranks on one GPU", ""},
		{"bad flag", "gloo", ready, "", "", `--backend "gloo": want tcp, nccl or auto`},
	} {
		choice, note, err := chooseBackend(tc.flag, tc.f)
		switch {
		case tc.err != "":
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: err %v, want %q", tc.name, err, tc.err)
			}
		case err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case choice != tc.choice || !strings.Contains(note, tc.note):
			t.Errorf("%s: %q, %q; want %q, %q", tc.name, choice, note, tc.choice, tc.note)
		}
	}
}

// TestBackendNCCLRefusedBeforeStart: where NCCL cannot run (here: no GPU, or
// for train the host tensors), --backend nccl is one message and exit 2,
// before any rank starts; auto says it chose tcp and runs.
func TestBackendNCCLRefusedBeforeStart(t *testing.T) {
	if f := probeBackend("nccl", "cuda", true, 2, func(string) string { return "" }); ncclUnusable(f) == "" {
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
