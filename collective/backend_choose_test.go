package collective

import (
	"errors"
	"strings"
	"testing"
)

// TestChooseBackend: the backend decision for every flag and situation.
func TestChooseBackend(t *testing.T) {
	ready := BackendFacts{Device: "cuda", Stage: true, Ranks: 2, GPUs: 2, NCCL: 23203}
	with := func(f func(*BackendFacts)) BackendFacts { b := ready; f(&b); return b }
	noGPU := with(func(b *BackendFacts) { b.GPUs, b.GPUErr = 0, errors.New("no CUDA device (cudaErrorNoDevice 100)") })
	noNCCL := with(func(b *BackendFacts) { b.NCCL, b.NCCLErr = 0, errors.New("libnccl.so.2 not found") })
	shared := with(func(b *BackendFacts) { b.Ranks, b.GPUs = 4, 1 })
	sharedOld := with(func(b *BackendFacts) { b.Ranks, b.GPUs, b.NCCL, b.MultiRank = 2, 1, 22907, true })
	for _, tc := range []struct {
		name, flag string
		f          BackendFacts
		choice     string
		note, err  string // substrings; "" for none
	}{
		{"tcp always", "tcp", noGPU, "tcp", "", ""},
		{"nccl ready", "nccl", ready, "nccl", "backend nccl (NCCL 2.32.3, 2 GPU(s))", ""},
		{"auto ready", "auto", ready, "nccl", "backend nccl", ""},
		{"nccl no GPU", "nccl", noGPU, "", "", "--backend nccl: no GPU: no CUDA device (cudaErrorNoDevice 100)"},
		{"auto no GPU", "auto", noGPU, "tcp", "backend tcp (auto: no GPU: no CUDA device", ""},
		{"nccl zero GPUs", "nccl", with(func(b *BackendFacts) { b.GPUs = 0 }), "", "", "no GPU visible (check CUDA_VISIBLE_DEVICES)"},
		{"nccl missing library", "nccl", noNCCL, "", "", "--backend nccl: NCCL did not load: libnccl.so.2 not found"},
		{"auto missing library", "auto", noNCCL, "tcp", "auto: NCCL did not load", ""},
		{"nccl cpu tensors", "nccl", with(func(b *BackendFacts) { b.Device = "cpu" }), "", "", "this run computes on the cpu (use --device cuda"},
		{"auto cpu tensors: the fix is left out", "auto", with(func(b *BackendFacts) { b.Device = "cpu" }), "tcp", "backend tcp (auto: NCCL moves GPU tensors and this run computes on the cpu)", ""},
		{"nccl stage loop", "nccl", with(func(b *BackendFacts) { b.Stage = false }), "", "", "the stage loop does not hand device tensors to NCCL"},
		{"shared GPU not enabled", "nccl", shared, "", "", "4 ranks on 1 GPU(s): set NCCL_MULTI_RANK_GPU_ENABLE=1"},
		{"shared GPU enabled", "nccl", with(func(b *BackendFacts) { b.Ranks, b.GPUs, b.MultiRank = 4, 1, true }), "nccl", "", ""},
		{"shared GPU old NCCL", "auto", sharedOld, "tcp", "NCCL 2.29.7 refuses two ranks on one GPU", ""},
		{"bad flag", "gloo", ready, "", "", `--backend "gloo": want tcp, nccl or auto`},
	} {
		choice, note, err := ChooseBackend(tc.flag, tc.f)
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

// TestProbeBackendTCP: --backend tcp, and tensors in host memory, load no
// library: the facts are the flags' and the environment's alone.
func TestProbeBackendTCP(t *testing.T) {
	env := func(k string) string {
		if k == "NCCL_MULTI_RANK_GPU_ENABLE" {
			return "1"
		}
		return ""
	}
	for _, tc := range []struct{ flag, device string }{{"tcp", "cuda"}, {"auto", "cpu"}, {"nccl", "cpu"}} {
		got := ProbeBackend(tc.flag, tc.device, true, 3, env)
		want := BackendFacts{Device: tc.device, Stage: true, Ranks: 3, MultiRank: true}
		if got != want {
			t.Errorf("--backend %s --device %s: %+v, want %+v", tc.flag, tc.device, got, want)
		}
	}
}

// TestTransfersOver: the start line names the backend the transfers take.
func TestTransfersOver(t *testing.T) {
	for _, tc := range []struct{ backend, want string }{
		{"tcp", "; transfers over tcp"},
		{"nccl", "; device tensors over nccl, host messages over tcp"},
	} {
		if got := TransfersOver(tc.backend); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.backend, got, tc.want)
		}
	}
}
