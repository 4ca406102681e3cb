package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"

	"github.com/pplaunch/pplaunch/models/tensor"
)

// devicesCmd is `pplaunch devices`: the NVIDIA libraries pplaunch finds (their
// versions and where each was loaded from) and the GPUs they see, as a rank
// with --device cuda would find them. It exits 2 when no GPU is usable.
type devicesCmd struct {
	JSON bool `arg:"--json" help:"print the description as JSON"`
}

func (c *devicesCmd) run(_ context.Context, stdout, _ io.Writer) error {
	info, err := tensor.DescribeCUDA()
	if err != nil {
		return exitError{code: 2, err: fmt.Errorf("devices: %w", err)}
	}
	if c.JSON {
		b, _ := json.MarshalIndent(devicesJSON(info), "", "  ") // strings, ints and maps always marshal
		fmt.Fprintln(stdout, string(b))
	} else {
		fmt.Fprint(stdout, info)
	}
	if len(info.Devices) == 0 {
		return exitError{code: 2, err: fmt.Errorf("devices: no usable GPU: %v", info.DeviceErr)}
	}
	return nil
}

// devicesJSON is info with the snake_case keys of pplaunch's other JSON.
func devicesJSON(info tensor.CUDAInfo) any {
	type device struct {
		Index      int    `json:"index"`
		Major      int    `json:"major"`
		Minor      int    `json:"minor"`
		SMs        int    `json:"sms"`
		FreeBytes  uint64 `json:"free_bytes"`
		TotalBytes uint64 `json:"total_bytes"`
	}
	out := struct {
		Driver    string            `json:"driver"`
		Runtime   string            `json:"runtime"`
		CUBLAS    string            `json:"cublas"`
		NVRTC     string            `json:"nvrtc"`
		Dirs      map[string]string `json:"dirs"`
		Devices   []device          `json:"devices"`
		DeviceErr string            `json:"device_error,omitempty"`
	}{Driver: info.Driver, Runtime: info.Runtime, CUBLAS: info.CUBLAS, NVRTC: info.NVRTC, Dirs: info.Dirs, Devices: []device{}}
	for _, d := range info.Devices {
		out.Devices = append(out.Devices, device{d.Index, d.Major, d.Minor, d.SMs, d.FreeBytes, d.TotalBytes})
	}
	if info.DeviceErr != nil {
		out.DeviceErr = info.DeviceErr.Error()
	}
	return out
}
