package main

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/pplaunch/pplaunch/cbits/cudaemu"
)

// TestDevicesEmulated: over the emulator (one GPU of compute capability 9.0)
// `pplaunch devices` names every library with the directory it came from and
// the GPU, and exits 0; --json gives the same as JSON.
func TestDevicesEmulated(t *testing.T) {
	dir := cudaemu.Dir(t)
	env := []string{"PPLAUNCH_CUDA_LIBS=" + dir}
	out, code := runPPLaunch(t, env, "devices")
	if code != 0 {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	for _, want := range []string{"libcudart.so.13 from " + dir, "libcublas.so.13 from " + dir, "libnvrtc.so.13 from " + dir,
		"GPU 0: compute capability 9.0 (sm_90)", "--backend auto, one rank per GPU: ", "--backend auto, two ranks per GPU: tcp"} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in:\n%s", want, out)
		}
	}
	out, code = runPPLaunch(t, env, "devices", "--json")
	var got struct {
		Runtime string
		Dirs    map[string]string
		Devices []struct{ Major, Minor int }
	}
	if err := json.Unmarshal([]byte(out), &got); code != 0 || err != nil {
		t.Fatalf("exit %d, %v:\n%s", code, err, out)
	}
	if len(got.Devices) != 1 || got.Devices[0].Major != 9 || got.Dirs["libcudart.so.13"] != dir || got.Runtime == "" {
		t.Errorf("JSON %+v does not describe the emulator's one GPU from %s", got, dir)
	}
}

// TestDevicesWithoutGPU: with NVIDIA's libraries but no driver (this
// machine, CI), `pplaunch devices` still says what it found, says why no GPU
// is usable, and exits 2.
func TestDevicesWithoutGPU(t *testing.T) {
	out, code := runPPLaunch(t, nil, "devices")
	switch {
	case code == 0:
		t.Skip("a GPU is usable here: the no-GPU description cannot be exercised")
	case strings.Contains(out, "libcudart.so.13") && strings.Contains(out, "not found"):
		t.Skipf("the NVIDIA libraries are not installed here (pip install nvidia-cuda-runtime nvidia-cublas nvidia-cuda-nvrtc):\n%s", out)
	}
	if code != 2 || !strings.Contains(out, "libcudart.so.13 from ") || !strings.Contains(out, "no usable GPU: no NVIDIA driver") {
		t.Fatalf("exit %d, want 2 with the libraries found and the missing driver named:\n%s", code, out)
	}
}

// TestDevicesJSONWithoutGPU: --json has snake_case keys, an empty device
// list rather than null, and the reason on stderr rather than "see above".
func TestDevicesJSONWithoutGPU(t *testing.T) {
	out, code := runPPLaunch(t, nil, "devices", "--json")
	switch {
	case code == 0:
		t.Skip("a GPU is usable here: the no-GPU description cannot be exercised")
	case strings.Contains(out, "not found"):
		t.Skipf("the NVIDIA libraries are not installed here:\n%s", out)
	}
	for _, want := range []string{`"devices": []`, `"device_error": "no NVIDIA driver`, `"runtime": `, "devices: no usable GPU: no NVIDIA driver"} {
		if !strings.Contains(out, want) {
			t.Errorf("exit %d, want %q in:\n%s", code, want, out)
		}
	}
	for _, bad := range []string{"DeviceErr", `"Devices"`, "see above"} {
		if strings.Contains(out, bad) {
			t.Errorf("%q in:\n%s", bad, out)
		}
	}
}

// TestDescribeNCCL: `pplaunch devices` names the NCCL found and what
// --backend auto makes of it for one and two ranks per GPU; below NCCL 2.30
// two ranks on one GPU are tcp, naming the version.
func TestDescribeNCCL(t *testing.T) {
	gpu := backendFacts{Device: "cuda", Stage: true, GPUs: 1}
	with := func(f func(*backendFacts)) backendFacts { b := gpu; f(&b); return b }
	for _, c := range []struct {
		name     string
		f        backendFacts
		one, two string // substrings of each Auto line
		head     string // substring of the first printed line
	}{
		{"2.28.9", with(func(b *backendFacts) { b.NCCL = 22809 }), "nccl (NCCL 2.28.9, 1 GPU(s))",
			"tcp, because 2 ranks on 1 GPU(s), and NCCL 2.28.9 refuses two ranks on one GPU (NCCL 2.30 or newer", "NCCL 2.28.9 from /nccl"},
		{"2.30 not enabled", with(func(b *backendFacts) { b.NCCL = 23001 }), "nccl (", "tcp, because 2 ranks on 1 GPU(s): set NCCL_MULTI_RANK_GPU_ENABLE=1", "NCCL 2.30.1"},
		{"2.30 enabled", with(func(b *backendFacts) { b.NCCL, b.MultiRank = 23001, true }), "nccl (", "nccl (NCCL 2.30.1", "NCCL 2.30.1"},
		{"no NCCL", with(func(b *backendFacts) { b.NCCLErr = errors.New("libnccl.so.2 not found\nlooked in ...") }),
			"tcp, because NCCL did not load: libnccl.so.2 not found", "tcp, because NCCL did not load", "NCCL not loaded: libnccl.so.2 not found\n"},
	} {
		nc := describeNCCL(c.f, "/nccl")
		s := nc.String()
		if !strings.Contains(nc.Auto[autoOnePerGPU], c.one) || !strings.Contains(nc.Auto[autoTwoPerGPU], c.two) || !strings.Contains(s, c.head) {
			t.Errorf("%s:\n%s\nwant %q, %q and %q", c.name, s, c.one, c.two, c.head)
		}
	}
}
