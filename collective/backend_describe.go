package collective

import (
	"fmt"
	"strings"
)

// NCCLInfo is what `pplaunch devices` says about NCCL: the library found,
// and what --backend auto makes of it on this machine.
type NCCLInfo struct {
	NCCL    string `json:"nccl,omitempty"` // e.g. "2.28.9"
	NCCLDir string `json:"nccl_dir,omitempty"`
	NCCLErr string `json:"nccl_error,omitempty"`
	// Auto is --backend auto's choice, with its reason, for one rank per
	// GPU (AutoOnePerGPU) and for two ranks on every GPU (AutoTwoPerGPU).
	Auto map[string]string `json:"backend_auto"`
}

// The layouts NCCLInfo.Auto describes.
const (
	AutoOnePerGPU = "one rank per GPU"
	AutoTwoPerGPU = "two ranks per GPU"
)

// DescribeNCCL loads NCCL and says what --backend auto chooses with it for
// a rank with --device cuda on a machine with gpus visible GPUs (gpuErr:
// why there are none), NCCL_MULTI_RANK_GPU_ENABLE read through getenv.
func DescribeNCCL(gpus int, gpuErr error, getenv func(string) string) NCCLInfo {
	f := BackendFacts{Device: "cuda", Stage: true, GPUs: gpus, GPUErr: gpuErr, MultiRank: getenv("NCCL_MULTI_RANK_GPU_ENABLE") == "1"}
	var dir string
	f.NCCL, dir, f.NCCLErr = ProbeNCCL()
	return describeNCCL(f, dir)
}

// describeNCCL says which NCCL was found (in dir) and what --backend auto
// chooses with it, for one and for two ranks per GPU (f.Ranks is ignored).
func describeNCCL(f BackendFacts, dir string) NCCLInfo {
	nc := NCCLInfo{NCCLDir: dir, Auto: map[string]string{}}
	if f.NCCLErr != nil {
		nc.NCCLErr = firstLine(f.NCCLErr.Error())
	} else {
		nc.NCCL = ncclVersion(f.NCCL)
	}
	gpus := max(f.GPUs, 1)
	for _, l := range []struct {
		name  string
		ranks int
	}{{AutoOnePerGPU, gpus}, {AutoTwoPerGPU, 2 * gpus}} {
		g := f
		g.Ranks = l.ranks
		if why := g.NCCLUnusable(); why != "" {
			nc.Auto[l.name] = "tcp, because " + why
		} else {
			nc.Auto[l.name] = fmt.Sprintf("nccl (NCCL %s, %d GPU(s))", ncclVersion(g.NCCL), g.GPUs)
		}
	}
	return nc
}

// String is the description as `pplaunch devices` prints it.
func (n NCCLInfo) String() string {
	var b strings.Builder
	if n.NCCLErr != "" {
		fmt.Fprintf(&b, "NCCL not loaded: %s\n", n.NCCLErr)
	} else {
		fmt.Fprintf(&b, "NCCL %s from %s\n", n.NCCL, n.NCCLDir)
	}
	for _, k := range []string{AutoOnePerGPU, AutoTwoPerGPU} {
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
