package main

import (
	"bytes"
	"context"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pplaunch/pplaunch/cbits/cudaemu"
)

// cudaModel is a model small enough for the CUDA emulator, which runs every
// GPU thread as a fiber on the CPU.
var cudaModel = []string{"--layers", "2", "--width", "32", "--heads", "2", "--seq", "16", "--tied",
	"--microbatch-size", "2", "--steps", "2", "--eval-every", "0", "--eval-batches", "1", "--timeout", "60s"}

// TestTrainCUDAEmulated runs `pplaunch train --device cuda` as processes
// over the CUDA emulator (PPLAUNCH_CUDA_LIBS, which the ranks inherit): two
// ranks sharing the one GPU with 1F1B and with zero-bubble H1, and four as pp
// 2 × dp 2, give the checkpoint bits of one process on CUDA, and that process
// gives the same bits twice and losses within 1e-4 of the CPU's; every rank
// reports its peak device memory; --nproc auto starts one rank per GPU.
func TestTrainCUDAEmulated(t *testing.T) {
	env := []string{"PPLAUNCH_CUDA_LIBS=" + cudaemu.Dir(t), "XDG_CACHE_HOME=" + t.TempDir()} // one kernel cache for the runs
	job := func(n int, dir string, args ...string) jobResult {
		t.Helper()
		args = append(append([]string{"--checkpoint-dir", dir}, cudaModel...), args...)
		r := runJob(t, n, 0, env, args...)
		mustSucceed(t, r, strings.Join(args, " "))
		if len(r.metrics) != 2 {
			t.Fatalf("%q: %d metric lines, want 2", args, len(r.metrics))
		}
		return r
	}
	refDir, againDir := t.TempDir(), t.TempDir()
	ref := job(1, refDir, "--device", "cuda", "--schedule", "gpipe", "--microbatches", "4")
	job(1, againDir, "--device", "cuda", "--schedule", "gpipe", "--microbatches", "4")
	compare(t, refDir, againDir)
	cpu := job(1, t.TempDir(), "--schedule", "gpipe", "--microbatches", "4")
	for i, m := range ref.metrics {
		if d := math.Abs(m.Loss - cpu.metrics[i].Loss); d > 1e-4 {
			t.Errorf("step %d: loss %v on CUDA, %v on the CPU: differ by %g > 1e-4", i, m.Loss, cpu.metrics[i].Loss, d)
		}
	}
	for _, tc := range []struct {
		name string
		n    int
		args []string
	}{
		{"1f1b", 2, []string{"--schedule", "1f1b", "--microbatches", "4"}},
		{"zb-h1", 2, []string{"--schedule", "zb-h1", "--microbatches", "4"}},
		{"pp2xdp2", 4, []string{"--schedule", "1f1b", "--dp", "2", "--microbatches", "2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			r := job(tc.n, dir, append([]string{"--device", "cuda"}, tc.args...)...)
			compare(t, dir, refDir)
			if want := "local ranks sharing it)"; !strings.Contains(r.out, want) {
				t.Errorf("the start line does not say %q:\n%s", want, r.out)
			}
			for _, m := range r.metrics {
				if len(m.PeakDevice) != tc.n || m.PeakDevice[tc.n-1] <= 0 {
					t.Errorf("step %d: peak device bytes %v, want one positive entry per rank", m.Step, m.PeakDevice)
				}
			}
			if !strings.Contains(r.out, "peak device memory") {
				t.Errorf("the summary does not give the peak device memory:\n%s", r.out)
			}
		})
	}
	out, code := runPPLaunch(t, env, "--nproc", "auto", "--standalone", "train", "--device", "cuda", "--steps", "1", "--layers", "1", "--width", "16", "--heads", "1", "--seq", "8", "--microbatches", "1", "--eval-batches", "0")
	if code != 0 || !strings.Contains(out, "; 1 ranks = pp 1") {
		t.Errorf("--nproc auto on the emulator's one GPU: exit %d\n%s", code, out)
	}
}

// runPPLaunch runs the binary with extra environment env and returns its
// output (stdout and stderr) and exit code.
func runPPLaunch(t *testing.T, env []string, argv ...string) (string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary(t), argv...)
	var out bytes.Buffer
	cmd.Env, cmd.Stdout, cmd.Stderr = append(os.Environ(), env...), &out, &out
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		return out.String(), ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return out.String(), 0
}

// TestTrainCUDAMissing: where --device cuda cannot run, the agent says why in
// one message before any rank starts, and exits 2: with the real NVIDIA
// libraries (the pip wheels) on a machine without a GPU, the missing driver
// or device and where the runtime came from; with PPLAUNCH_CUDA_LIBS naming
// an empty directory and no Python to ask for site-packages, every library
// not found and the places looked at.
func TestTrainCUDAMissing(t *testing.T) {
	argv := []string{"--nproc", "2", "--standalone", "train", "--device", "cuda", "--steps", "1"}
	const prefix = "pplaunch: train: --device cuda: cuda backend: "
	oneMessage := func(what, out string, code int) {
		t.Helper()
		if code != 2 || !strings.HasPrefix(out, prefix) || strings.Count(out, "pplaunch:") != 1 || strings.Contains(out, "[rank") {
			t.Fatalf("%s: exit %d, output:\n%s\nwant exit 2 and one message starting %q, before any rank", what, code, out, prefix)
		}
	}

	t.Run("real-libraries", func(t *testing.T) {
		out, code := runPPLaunch(t, nil, argv...)
		switch {
		case code == 0:
			t.Skip("a GPU is present here: the missing-GPU path cannot be exercised")
		case strings.Contains(out, "libcudart.so.13") && strings.Contains(out, "not found"):
			t.Skipf("the NVIDIA libraries are not installed here (pip install nvidia-cuda-runtime nvidia-cublas nvidia-cuda-nvrtc):\n%s", out)
		}
		oneMessage("real libraries without a GPU", out, code)
		if !strings.Contains(out, "no NVIDIA driver (cudaErrorInsufficientDriver 35") && !strings.Contains(out, "no CUDA device") {
			t.Errorf("the message names neither the driver nor the device:\n%s", out)
		}
		if !strings.Contains(out, "(CUDA runtime 13.") || !strings.Contains(out, " from ") {
			t.Errorf("the message does not say which runtime was loaded from where:\n%s", out)
		}
		t.Logf("without a GPU: %s", out)
	})

	t.Run("empty-PPLAUNCH_CUDA_LIBS", func(t *testing.T) {
		empty, home := t.TempDir(), t.TempDir()
		env := []string{"PPLAUNCH_CUDA_LIBS=" + empty, "PATH=" + empty, "HOME=" + home, "VIRTUAL_ENV=", "CONDA_PREFIX=",
			"LD_LIBRARY_PATH=", "CUDA_PATH=", "CUDA_HOME="}
		out, code := runPPLaunch(t, env, argv...)
		if code == 0 {
			t.Skip("the CUDA libraries and a GPU were found in a system location: nothing is missing")
		}
		oneMessage("PPLAUNCH_CUDA_LIBS empty", out, code)
		found := strings.Contains(out, "no NVIDIA driver") || strings.Contains(out, "no CUDA device")
		if !found && (!strings.Contains(out, "libcudart.so.13") || !strings.Contains(out, filepath.Clean(empty))) {
			t.Errorf("the message names neither the missing runtime and the empty directory looked in, nor a driver or device found missing:\n%s", out)
		}
		t.Logf("with nothing to load: %s", out)
	})
}

// TestTrainCUDABackendChoice: with tensors on the (emulated) GPU, train
// accepts --backend nccl|auto as far as the machine allows: two ranks on the
// one GPU without NCCL_MULTI_RANK_GPU_ENABLE (or without NCCL) are refused
// before anything starts, naming why and not the stage loop; auto runs over
// tcp, says so, and the start line says where the transfers go.
func TestTrainCUDABackendChoice(t *testing.T) {
	env := []string{"PPLAUNCH_CUDA_LIBS=" + cudaemu.Dir(t), "XDG_CACHE_HOME=" + t.TempDir(), "NCCL_MULTI_RANK_GPU_ENABLE="}
	args := append([]string{"--no-tag", "--nproc", "2", "--standalone", "train", "--device", "cuda"}, cudaModel...)
	args = append(args, "--steps", "1", "--microbatches", "2", "--check-transfers")
	out, code := runPPLaunch(t, env, append(args, "--backend", "nccl")...)
	if code != 2 || !strings.Contains(out, "--backend nccl: ") || strings.Contains(out, "stage loop") {
		t.Errorf("--backend nccl with 2 ranks on one GPU: exit %d\n%s", code, out)
	}
	out, code = runPPLaunch(t, env, append(args, "--backend", "auto")...)
	if code != 0 || !strings.Contains(out, "pplaunch: backend tcp (auto: ") || !strings.Contains(out, "; transfers over tcp") {
		t.Errorf("--backend auto: exit %d\n%s", code, out)
	}
}
