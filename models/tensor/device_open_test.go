package tensor

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// TestGPUPlacement: a rank's GPU is its local rank modulo the visible GPUs,
// and the start line says when ranks share one.
func TestGPUPlacement(t *testing.T) {
	for _, tc := range []struct{ local, gpus, want int }{{0, 1, 0}, {3, 1, 0}, {1, 2, 1}, {2, 2, 0}, {5, 8, 5}} {
		if got := GPUOf(tc.local, tc.gpus); got != tc.want {
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
		if got := CUDAPlacement("cuda:0", tc.ranks, tc.gpus); got != tc.want {
			t.Errorf("%d ranks on %d GPUs: %q, want %q", tc.ranks, tc.gpus, got, tc.want)
		}
	}
}

// TestOpenRefuses: an unknown device, a machine without a GPU and a GPU
// that does not open are each one error naming --device and, for a GPU,
// which rank asked for which one; the GPU count is not asked for the CPU.
func TestOpenRefuses(t *testing.T) {
	noGPU := errors.New("--device cuda: cuda backend: no CUDA device (cudaErrorNoDevice 100)")
	busy := errors.New("cuda backend: GPU 1 takes one process at a time")
	for _, tc := range []struct {
		name, device string
		gpus         int
		gpuErr       error
		want         string
	}{
		{"unknown device", "tpu", 0, nil, `--device "tpu": want cpu or cuda`},
		{"no GPU", "cuda", 0, noGPU, noGPU.Error()},
		{"GPU refuses", "cuda", 2, nil, "--device cuda (local rank 3 on GPU 1 of 2): " + busy.Error()},
	} {
		asked := -1
		_, err := openWith(tc.device, 3, 4, OpenOptions{},
			func() (int, error) {
				if tc.device != DeviceCUDA {
					t.Errorf("%s: the GPUs were counted", tc.name)
				}
				return tc.gpus, tc.gpuErr
			},
			func(gpu int, _ CUDAOptions) (*CUDA, error) { asked = gpu; return nil, busy })
		if err == nil || err.Error() != tc.want {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
		if tc.gpuErr == nil && tc.gpus > 0 && asked != 1 {
			t.Errorf("%s: GPU %d opened, want GPU 1 (local rank 3 mod 2)", tc.name, asked)
		}
	}
}

// TestOpenCPU: --device cpu opens the CPU backend, named on the start line.
func TestOpenCPU(t *testing.T) {
	o, err := Open(DeviceCPU, 0, 1, OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	cpu, ok := o.Backend.(*CPU)
	if !ok || o.What != cpu.Name() || o.Hint != cpu.OpenBLASHint() || o.Backend.Device() != nil {
		t.Errorf("%T %q (hint %q): want the CPU backend under its own name", o.Backend, o.What, o.Hint)
	}
}

// TestOpenCUDA: --device cuda opens the CUDA backend (here on the emulator's
// one GPU) on the rank's GPU, with TF32 as asked, and says how the node's
// ranks share the GPUs.
func TestOpenCUDA(t *testing.T) {
	api := emuCUDA(t).dev.api
	var asked CUDAOptions
	o, err := openWith(DeviceCUDA, 2, 3, OpenOptions{TF32: true}, func() (int, error) { return 1, nil },
		func(gpu int, opts CUDAOptions) (*CUDA, error) {
			asked = opts
			opts.KernelCache = "-"
			return newCUDAWith(api, gpu, opts)
		})
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	if !asked.TF32 || o.Backend.Device() == nil || !strings.HasSuffix(o.What, " (GPU = LOCAL_RANK mod 1 visible GPU, 3 local ranks sharing it)") || o.Hint != "" {
		t.Errorf("TF32 %v, device %v, start line %q, hint %q", asked.TF32, o.Backend.Device(), o.What, o.Hint)
	}
}

// TestGPUsNamesTheFlag: where no GPU is usable, the count's error names
// --device cuda and the backend.
func TestGPUsNamesTheFlag(t *testing.T) {
	n, err := GPUs()
	switch {
	case err == nil && n < 1:
		t.Errorf("%d GPUs and no error", n)
	case err != nil && !strings.HasPrefix(err.Error(), "--device cuda: cuda backend: "):
		t.Errorf("%v: want it to start with --device cuda: cuda backend:", err)
	}
}

// TestCUDAInfoJSON: `pplaunch devices --json` has snake_case keys, an empty
// device list rather than null, and the reason no GPU is usable as a string.
func TestCUDAInfoJSON(t *testing.T) {
	for _, tc := range []struct {
		name string
		info CUDAInfo
		want CUDAInfoJSON
	}{
		{"no driver", CUDAInfo{Driver: "none", Runtime: "13.5", DeviceErr: errors.New("no NVIDIA driver")},
			CUDAInfoJSON{Driver: "none", Runtime: "13.5", Devices: []CUDADeviceJSON{}, DeviceErr: "no NVIDIA driver"}},
		{"one GPU", CUDAInfo{Driver: "13.0", Devices: []CUDADeviceInfo{{Index: 0, Major: 9, SMs: 132, FreeBytes: 1, TotalBytes: 2, ComputeMode: "default"}}},
			CUDAInfoJSON{Driver: "13.0", Devices: []CUDADeviceJSON{{Major: 9, SMs: 132, FreeBytes: 1, TotalBytes: 2, ComputeMode: "default"}}}},
	} {
		got, _ := json.Marshal(tc.info.JSON())
		want, _ := json.Marshal(tc.want)
		if string(got) != string(want) {
			t.Errorf("%s:\n%s\nwant\n%s", tc.name, got, want)
		}
	}
	got, _ := json.Marshal(CUDAInfo{}.JSON())
	for _, key := range []string{`"driver":`, `"dirs":`, `"devices":[]`} {
		if !strings.Contains(string(got), key) {
			t.Errorf("no %s in %s", key, got)
		}
	}
	if strings.Contains(string(got), "device_error") {
		t.Errorf("device_error with no error: %s", got)
	}
}
