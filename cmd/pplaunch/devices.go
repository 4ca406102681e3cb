package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"

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

func (c *devicesCmd) run(_ context.Context, stdout, _ io.Writer) error {
	info, err := tensor.DescribeCUDA()
	if err != nil {
		return exitError{code: 2, err: fmt.Errorf("devices: %w", err)}
	}
	nc := collective.DescribeNCCL(len(info.Devices), info.DeviceErr, os.Getenv)
	if c.JSON {
		out := struct {
			tensor.CUDAInfoJSON
			collective.NCCLInfo
		}{info.JSON(), nc}
		b, _ := json.MarshalIndent(out, "", "  ") // strings, ints and maps always marshal
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
