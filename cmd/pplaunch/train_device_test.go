package main

import (
	"errors"
	"strings"
	"testing"

	"github.com/pplaunch/pplaunch/contract"
)

// TestTrainPrepareDevice: with --device cuda the agent asks the runtime
// once, before any rank: --nproc auto becomes the GPU count, and a missing
// GPU is the error tensor.GPUs gives (naming --device cuda and the cause);
// --device cpu, a rank and --direct do not ask; an unknown device is refused.
func TestTrainPrepareDevice(t *testing.T) {
	t.Setenv(contract.EnvRole, "")
	asked := 0
	gpus, why := 3, error(nil)
	defer func(f func() (int, error)) { visibleGPUs = f }(visibleGPUs)
	visibleGPUs = func() (int, error) { asked++; return gpus, why }
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
	gpus, why = 0, errors.New("--device cuda: cuda backend: no CUDA device (cudaErrorNoDevice 100: the driver sees no GPU)")
	if _, err := prep("--nproc", "auto", "train", "--device", "cuda"); !errors.Is(err, why) {
		t.Errorf("no GPU: %v", err)
	}
	if _, err := prep("--nproc", "1", "train", "--device", "tpu"); err == nil || !strings.Contains(err.Error(), `--device "tpu": want cpu or cuda`) {
		t.Errorf("--device tpu: %v", err)
	}
}
