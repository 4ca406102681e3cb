package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/pplaunch/pplaunch/cbits"
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
	NCCL    string `json:",omitempty"` // e.g. "2.28.9"
	NCCLDir string `json:",omitempty"`
	NCCLErr string `json:",omitempty"`
	// Auto is --backend auto's choice, with its reason, for one rank per
	// GPU and for two ranks on every GPU.
	Auto map[string]string
}

func (c *devicesCmd) run(_ context.Context, stdout, _ io.Writer) error {
	info, err := tensor.DescribeCUDA()
	if err != nil {
		return exitError{code: 2, err: fmt.Errorf("devices: %w", err)}
	}
	f := backendFacts{Device: "cuda", Stage: true, GPUs: len(info.Devices), GPUErr: info.DeviceErr,
		MultiRank: os.Getenv("NCCL_MULTI_RANK_GPU_ENABLE") == "1"}
	var dir string
	if n, err := cbits.LoadNCCL(); err != nil {
		f.NCCLErr = err
	} else {
		f.NCCL, dir = n.Version(), n.Dir()
	}
	nc := describeNCCL(f, dir)
	if c.JSON {
		type out struct {
			tensor.CUDAInfo
			ncclInfo
			DeviceErr string `json:"DeviceErr,omitempty"`
		}
		o := out{CUDAInfo: info, ncclInfo: nc}
		if info.DeviceErr != nil {
			o.DeviceErr = info.DeviceErr.Error()
		}
		b, _ := json.MarshalIndent(o, "", "  ") // strings, ints and maps always marshal
		fmt.Fprintln(stdout, string(b))
	} else {
		fmt.Fprint(stdout, info)
		fmt.Fprint(stdout, nc)
	}
	if len(info.Devices) == 0 {
		return exitError{code: 2, err: errors.New("devices: no usable GPU (see above)")}
	}
	return nil
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
