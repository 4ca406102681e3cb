package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/pplaunch/pplaunch/collective"
	"github.com/pplaunch/pplaunch/models/tensor"
)

// devicesCmd is `pplaunch devices`: the NVIDIA libraries pplaunch finds (their
// versions and where each was loaded from), the GPUs they see, and what
// `--backend auto` makes of them, as a rank with --device cuda would find
// them. It exits 2 when no GPU is usable.
type devicesCmd struct {
	JSON bool `arg:"--json" help:"print the description as JSON"`
}

// ncclInfo is what `pplaunch devices` says about NCCL.
type ncclInfo struct {
	NCCL    string `json:"nccl,omitempty"` // e.g. "2.28.9"
	NCCLDir string `json:"nccl_dir,omitempty"`
	NCCLErr string `json:"nccl_error,omitempty"`
	// Auto is --backend auto's choice, with its reason, for one rank per
	// GPU and for two ranks on every GPU.
	Auto map[string]string `json:"backend_auto"`
}

func (c *devicesCmd) run(_ context.Context, stdout, _ io.Writer) error {
	info, err := tensor.DescribeCUDA()
	if err != nil {
		return exitError{code: 2, err: fmt.Errorf("devices: %w", err)}
	}
	f := backendFacts{Device: "cuda", Stage: true, GPUs: len(info.Devices), GPUErr: info.DeviceErr,
		MultiRank: os.Getenv("NCCL_MULTI_RANK_GPU_ENABLE") == "1"}
	var dir string
	f.NCCL, dir, f.NCCLErr = collective.ProbeNCCL()
	nc := describeNCCL(f, dir)
	if c.JSON {
		b, _ := json.MarshalIndent(devicesJSON(info, nc), "", "  ") // strings, ints and maps always marshal
		fmt.Fprintln(stdout, string(b))
	} else {
		fmt.Fprint(stdout, info)
		fmt.Fprint(stdout, nc)
	}
	if len(info.Devices) == 0 {
		return exitError{code: 2, err: fmt.Errorf("devices: no usable GPU: %v", info.DeviceErr)}
	}
	return nil
}

// devicesJSON is info with the snake_case keys of pplaunch's other JSON.
func devicesJSON(info tensor.CUDAInfo, nc ncclInfo) any {
	type device struct {
		Index      int    `json:"index"`
		Major      int    `json:"major"`
		Minor      int    `json:"minor"`
		SMs        int    `json:"sms"`
		FreeBytes  uint64 `json:"free_bytes"`
		TotalBytes uint64 `json:"total_bytes"`
		// ComputeMode is the driver's ("default", "exclusive-process",
		// ...): exclusive-process refuses several ranks on the GPU.
		ComputeMode string `json:"compute_mode"`
	}
	out := struct {
		Driver    string            `json:"driver"`
		Runtime   string            `json:"runtime"`
		CUBLAS    string            `json:"cublas"`
		NVRTC     string            `json:"nvrtc"`
		Dirs      map[string]string `json:"dirs"`
		Devices   []device          `json:"devices"`
		DeviceErr string            `json:"device_error,omitempty"`
		ncclInfo
	}{Driver: info.Driver, Runtime: info.Runtime, CUBLAS: info.CUBLAS, NVRTC: info.NVRTC, Dirs: info.Dirs, Devices: []device{}, ncclInfo: nc}
	for _, d := range info.Devices {
		out.Devices = append(out.Devices, device{d.Index, d.Major, d.Minor, d.SMs, d.FreeBytes, d.TotalBytes, d.ComputeMode})
	}
	if info.DeviceErr != nil {
		out.DeviceErr = info.DeviceErr.Error()
	}
	return out
}

// Layouts that describeNCCL asks chooseBackend about.
const (
	autoOnePerGPU = "one rank per GPU"
	autoTwoPerGPU = "two ranks per GPU"
)

// describeNCCL says which NCCL was found and what --backend auto chooses
// with it here, for one and for two ranks per GPU (f.Ranks is ignored).
func describeNCCL(f backendFacts, dir string) ncclInfo {
	nc := ncclInfo{NCCLDir: dir, Auto: map[string]string{}}
	if f.NCCLErr != nil {
		nc.NCCLErr = firstLine(f.NCCLErr.Error())
	} else {
		nc.NCCL = ncclVersion(f.NCCL)
	}
	gpus := max(f.GPUs, 1)
	for _, l := range []struct {
		name  string
		ranks int
	}{{autoOnePerGPU, gpus}, {autoTwoPerGPU, 2 * gpus}} {
		g := f
		g.Ranks = l.ranks
		if why := ncclUnusable(g); why != "" {
			nc.Auto[l.name] = "tcp, because " + why
		} else {
			nc.Auto[l.name] = fmt.Sprintf("nccl (NCCL %s, %d GPU(s))", ncclVersion(g.NCCL), g.GPUs)
		}
	}
	return nc
}

func (n ncclInfo) String() string {
	var b strings.Builder
	if n.NCCLErr != "" {
		fmt.Fprintf(&b, "NCCL not loaded: %s\n", n.NCCLErr)
	} else {
		fmt.Fprintf(&b, "NCCL %s from %s\n", n.NCCL, n.NCCLDir)
	}
	for _, k := range []string{autoOnePerGPU, autoTwoPerGPU} {
		fmt.Fprintf(&b, "--backend auto, %s: %s\n", k, n.Auto[k])
	}
	return b.String()
}

// firstLine is s up to its first newline.
func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}
