package ranks

import (
	"github.com/prometheus/procfs"

	"github.com/pplaunch/pplaunch/models/tensor"
)

// DeviceMemoryReporter is what a backend whose tensors live on a device
// implements to have the bytes it holds reported with every step
// (StepRecord.DeviceMemory, and the Prometheus metrics). The CPU backend
// does not: its tensors are the RSS.
type DeviceMemoryReporter interface {
	DeviceMemoryBytes() int64
}

// deviceBytes is what be holds on its device, -1 when it does not say.
func deviceBytes(be tensor.Backend) int64 {
	if r, ok := be.(DeviceMemoryReporter); ok {
		return r.DeviceMemoryBytes()
	}
	return -1
}

// rssBytes is this process's resident set size from /proc/self/stat, 0
// where there is no procfs.
func rssBytes() int64 {
	p, err := procfs.Self()
	if err != nil {
		return 0
	}
	st, err := p.Stat()
	if err != nil {
		return 0
	}
	return int64(st.ResidentMemory())
}
