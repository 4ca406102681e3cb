package main

import (
	"encoding/json"
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
