package main

import (
	"errors"
	"strings"
	"testing"

	"github.com/pplaunch/pplaunch/contract"
)

// TestGPUPlacement: a rank's GPU is its local rank modulo the visible GPUs,
// and the start line says when ranks share one.
func TestGPUPlacement(t *testing.T) {
	for _, tc := range []struct{ local, gpus, want int }{{0, 1, 0}, {3, 1, 0}, {1, 2, 1}, {2, 2, 0}, {5, 8, 5}} {
		if got := gpuOf(tc.local, tc.gpus); got != tc.want {
			t.Errorf("local rank %d of %d GPUs: GPU %d, want %d", tc.local, tc.gpus, got, tc.want)
		}
	}
	for _, tc := range []struct {
		ranks, gpus int
		want        string
	}{
		{1, 1, "cuda:0 (GPU = LOCAL_RANK mod 1 visible GPU)"},
		{4, 1, "cuda:0 (GPU = LOCAL_RANK mod 1 visible GPU, 4 local ranks sharing it)"},
		{2, 8, "cuda:0 (GPU = LOCAL_RANK mod 8 visible GPUs)"},
		{16, 8, "cuda:0 (GPU = LOCAL_RANK mod 8 visible GPUs, 16 local ranks sharing them)"},
	} {
		if got := cudaPlacement("cuda:0", tc.ranks, tc.gpus); got != tc.want {
			t.Errorf("%d ranks on %d GPUs: %q, want %q", tc.ranks, tc.gpus, got, tc.want)
		}
	}
}

// TestTrainPrepareDevice: with --device cuda the agent asks the runtime
// once, before any rank: --nproc auto becomes the GPU count, and a missing
// GPU is an error naming --device cuda and the cause; --device cpu, a rank
// and --direct do not ask; an unknown device is refused.
func TestTrainPrepareDevice(t *testing.T) {
	t.Setenv(contract.EnvRole, "")
	asked := 0
	gpus, why := 3, error(nil)
	defer func(f func() (int, error)) { cudaDevices = f }(cudaDevices)
	cudaDevices = func() (int, error) { asked++; return gpus, why }
	agent := func(string) string { return "" }
	prep := func(argv ...string) (string, error) {
		t.Helper()
		c := parseCLI(t, argv)
		f, err := c.Train.prepareDevice(c.Flags, agent)
		return f.NProc, err
	}
	if n, err := prep("--nproc", "auto", "train", "--device", "cuda"); err != nil || n != "3" || asked != 1 {
		t.Errorf("--nproc auto on 3 GPUs: --nproc %s, %v after %d questions; want 3", n, err, asked)
	}
	if n, err := prep("--nproc", "4", "train", "--device", "cuda"); err != nil || n != "4" {
		t.Errorf("--nproc 4 on 3 GPUs: --nproc %s, %v; want 4 (ranks share GPUs)", n, err)
	}
	asked = 0
	if _, err := prep("--nproc", "auto", "train"); err != nil || asked != 0 {
		t.Errorf("--device cpu: %v after %d questions to the CUDA runtime, want none", err, asked)
	}
	c := parseCLI(t, []string{"--nproc", "2", "train", "--device", "cuda"})
	if _, err := c.Train.prepareDevice(c.Flags, func(k string) string {
		if k == contract.EnvRole {
			return contract.RoleRank
		}
		return ""
	}); err != nil || asked != 0 {
		t.Errorf("in a rank: %v after %d questions, want none (the rank opens its device)", err, asked)
	}
	gpus, why = 0, errors.New("no CUDA device (cudaErrorNoDevice 100: the driver sees no GPU)")
	if _, err := prep("--nproc", "auto", "train", "--device", "cuda"); err == nil ||
		err.Error() != "--device cuda: cuda backend: no CUDA device (cudaErrorNoDevice 100: the driver sees no GPU)" {
		t.Errorf("no GPU: %v", err)
	}
	if _, err := prep("--nproc", "1", "train", "--device", "tpu"); err == nil || !strings.Contains(err.Error(), `--device "tpu": want cpu or cuda`) {
		t.Errorf("--device tpu: %v", err)
	}
}
