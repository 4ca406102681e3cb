package collective

import "github.com/pplaunch/pplaunch/cbits"

// ProbeGPUs is the number of GPUs the CUDA runtime sees, loading it: what
// --backend auto and `pplaunch devices` need to know before any rank opens
// a communicator.
func ProbeGPUs() (int, error) {
	c, err := cbits.LoadCUDA()
	if err != nil {
		return 0, err
	}
	return c.DeviceCount()
}

// ProbeNCCL loads NCCL and says its version code (e.g. 22809 for 2.28.9)
// and the directory it was loaded from.
func ProbeNCCL() (version int, dir string, err error) {
	n, err := cbits.LoadNCCL()
	if err != nil {
		return 0, "", err
	}
	return n.Version(), n.Dir(), nil
}

// ProbeBackend gathers ChooseBackend's facts from the machine for --backend
// flag, tensors on device, stage (whether the program hands the
// communicator device tensors) and ranks on this node: the libraries are
// loaded only when the flag is not tcp and the tensors are on a GPU.
func ProbeBackend(flag, device string, stage bool, ranks int, getenv func(string) string) BackendFacts {
	f := BackendFacts{Device: device, Stage: stage, Ranks: ranks, MultiRank: getenv("NCCL_MULTI_RANK_GPU_ENABLE") == "1"}
	if flag == BackendTCP || device != "cuda" {
		return f
	}
	f.GPUs, f.GPUErr = ProbeGPUs()
	f.NCCL, _, f.NCCLErr = ProbeNCCL()
	return f
}
