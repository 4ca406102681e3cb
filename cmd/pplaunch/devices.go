package main

import (
	"context"
	"encoding/json"
	"errors"
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
		type out struct {
			tensor.CUDAInfo
			DeviceErr string `json:"DeviceErr,omitempty"`
		}
		o := out{CUDAInfo: info}
		if info.DeviceErr != nil {
			o.DeviceErr = info.DeviceErr.Error()
		}
		b, _ := json.MarshalIndent(o, "", "  ") // strings, ints and maps always marshal
		fmt.Fprintln(stdout, string(b))
	} else {
		fmt.Fprint(stdout, info)
	}
	if len(info.Devices) == 0 {
		return exitError{code: 2, err: errors.New("devices: no usable GPU (see above)")}
	}
	return nil
}
