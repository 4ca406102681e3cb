package tensor

import (
	"fmt"
	"runtime"
	"sort"
	"strings"

	"github.com/pplaunch/pplaunch/cbits"
)

// CUDAInfo is what the NVIDIA libraries pplaunch loads report about
// themselves and the GPUs they see: what `pplaunch devices` prints.
type CUDAInfo struct {
	Driver, Runtime, CUBLAS, NVRTC string // versions ("none" for no driver)
	Dirs                           map[string]string
	Devices                        []CUDADeviceInfo
	// DeviceErr says why no GPU is usable (no driver, no device), if none is.
	DeviceErr error `json:"-"`
}

// CUDADeviceInfo is one visible GPU.
type CUDADeviceInfo struct {
	Index, Major, Minor, SMs int
	FreeBytes, TotalBytes    uint64
	// ComputeMode is the driver's compute mode: "default",
	// "exclusive-process" (one process at a time: several ranks on this GPU
	// need MPS), "prohibited", or "unknown" where the runtime does not say.
	ComputeMode string
}

// computeModes names cudaDeviceAttr 20's values.
var computeModes = map[int]string{0: "default", 1: "exclusive-thread", 2: "prohibited", 3: "exclusive-process"}

// Shared says whether several processes can use the GPU at once.
func (d CUDADeviceInfo) Shared() bool {
	return d.ComputeMode == "default" || d.ComputeMode == "unknown"
}

// DescribeCUDA loads the CUDA libraries as NewCUDA would and asks each visible
// GPU for its compute capability, multiprocessor count and memory. A library
// that cannot be loaded is an error naming every place looked at; a machine
// without a driver or a GPU is described, with DeviceErr saying which.
func DescribeCUDA() (CUDAInfo, error) {
	l, err := cbits.LoadCUDA()
	if err != nil {
		return CUDAInfo{}, err
	}
	v := l.Versions()
	info := CUDAInfo{Driver: cudaVersion(v.Driver), Runtime: cudaVersion(v.Runtime), Dirs: v.Dirs,
		CUBLAS: fmt.Sprintf("%d.%d.%d", v.CUBLAS/10000, v.CUBLAS%10000/100, v.CUBLAS%100),
		NVRTC:  fmt.Sprintf("%d.%d", v.NVRTCMajor, v.NVRTCMinor)}
	n, err := l.DeviceCount()
	if err != nil {
		info.DeviceErr = err
		return info, nil
	}
	// The current device is per OS thread: ask every device from this one.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	for d := range n {
		di := CUDADeviceInfo{Index: d}
		if err := l.SetDevice(d); err != nil {
			return info, fmt.Errorf("GPU %d: %w", d, err)
		}
		for _, a := range []struct {
			attr int
			dst  *int
		}{{cbits.AttrComputeCapabilityMajor, &di.Major}, {cbits.AttrComputeCapabilityMinor, &di.Minor}, {cbits.AttrMultiProcessorCount, &di.SMs}} {
			if *a.dst, err = l.DeviceAttribute(a.attr, d); err != nil {
				return info, fmt.Errorf("GPU %d: %w", d, err)
			}
		}
		di.ComputeMode = "unknown"
		if m, err := l.DeviceAttribute(cbits.AttrComputeMode, d); err == nil && computeModes[m] != "" {
			di.ComputeMode = computeModes[m]
		} else if err != nil {
			_ = l.GetLastError() // a runtime that does not know the attribute: not a failure
		}
		if di.FreeBytes, di.TotalBytes, err = l.MemGetInfo(); err != nil {
			return info, fmt.Errorf("GPU %d: %w", d, err)
		}
		info.Devices = append(info.Devices, di)
	}
	return info, nil
}

// cudaVersion prints a CUDA version number (13000 is "13.0"); 0 is "none".
func cudaVersion(v int) string {
	if v == 0 {
		return "none"
	}
	return fmt.Sprintf("%d.%d", v/1000, v%1000/10)
}

// String is the description as `pplaunch devices` prints it.
func (i CUDAInfo) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "CUDA driver %s, runtime %s, cuBLAS %s, NVRTC %s\n", i.Driver, i.Runtime, i.CUBLAS, i.NVRTC)
	names := make([]string, 0, len(i.Dirs))
	for n := range i.Dirs {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(&b, "  %s from %s\n", n, i.Dirs[n])
	}
	if i.DeviceErr != nil {
		fmt.Fprintf(&b, "no usable GPU: %v\n", i.DeviceErr)
	}
	for _, d := range i.Devices {
		fmt.Fprintf(&b, "GPU %d: compute capability %d.%d (sm_%d%d), %d multiprocessors, %.1f GiB of %.1f GiB free, compute mode %s\n",
			d.Index, d.Major, d.Minor, d.Major, d.Minor, d.SMs, float64(d.FreeBytes)/(1<<30), float64(d.TotalBytes)/(1<<30), d.ComputeMode)
		if !d.Shared() {
			fmt.Fprintf(&b, "  compute mode %s: one process at a time on GPU %d; several ranks on it need MPS (nvidia-cuda-mps-control -d) or 'nvidia-smi -c DEFAULT'\n", d.ComputeMode, d.Index)
		}
	}
	return b.String()
}
