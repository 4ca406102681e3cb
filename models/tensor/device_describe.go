package tensor

// CUDAInfoJSON is CUDAInfo with the snake_case keys of pplaunch's other JSON
// (`pplaunch devices --json`): an empty device list rather than null, and the
// reason no GPU is usable as a string.
type CUDAInfoJSON struct {
	Driver    string            `json:"driver"`
	Runtime   string            `json:"runtime"`
	CUBLAS    string            `json:"cublas"`
	NVRTC     string            `json:"nvrtc"`
	Dirs      map[string]string `json:"dirs"`
	Devices   []CUDADeviceJSON  `json:"devices"`
	DeviceErr string            `json:"device_error,omitempty"`
}

// CUDADeviceJSON is one visible GPU in CUDAInfoJSON.
type CUDADeviceJSON struct {
	Index      int    `json:"index"`
	Major      int    `json:"major"`
	Minor      int    `json:"minor"`
	SMs        int    `json:"sms"`
	FreeBytes  uint64 `json:"free_bytes"`
	TotalBytes uint64 `json:"total_bytes"`
	// ComputeMode is the driver's ("default", "exclusive-process", ...):
	// exclusive-process refuses several ranks on the GPU.
	ComputeMode string `json:"compute_mode"`
}

// JSON is the description in the form `pplaunch devices --json` prints.
func (i CUDAInfo) JSON() CUDAInfoJSON {
	out := CUDAInfoJSON{Driver: i.Driver, Runtime: i.Runtime, CUBLAS: i.CUBLAS, NVRTC: i.NVRTC, Dirs: i.Dirs, Devices: []CUDADeviceJSON{}}
	for _, d := range i.Devices {
		out.Devices = append(out.Devices, CUDADeviceJSON{d.Index, d.Major, d.Minor, d.SMs, d.FreeBytes, d.TotalBytes, d.ComputeMode})
	}
	if i.DeviceErr != nil {
		out.DeviceErr = i.DeviceErr.Error()
	}
	return out
}
