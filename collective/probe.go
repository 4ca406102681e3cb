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
