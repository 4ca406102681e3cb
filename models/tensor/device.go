package tensor

// Device is a backend's GPU, for a communicator that moves device memory
// itself (collective.NewNCCL): the thread every CUDA and NCCL call for the
// GPU is made on, the stream the backend computes on, and a tensor's device
// address. It is a collective.DeviceThread with DevicePtr. Memory.Device
// gives it; it is nil where tensors live in host memory.
type Device interface {
	// Call runs f on the device's thread after everything queued before it
	// and returns its error (or that of a queued operation that failed before).
	Call(f func() error) error
	// ComputeStream is the cudaStream_t the backend computes on.
	ComputeStream() uintptr
	// DevicePtr is the device address of t, a tensor of this backend.
	DevicePtr(t *Tensor) uintptr
}

var _ Device = (*CUDA)(nil)

// Sync returns at once: the CPU backend computes as it is called.
func (*CPU) Sync() error { return nil }

// DeviceMemory is not ok: the CPU backend's tensors live in host memory.
func (*CPU) DeviceMemory() (MemoryStats, bool) { return MemoryStats{}, false }

// ResetPeakMemory does nothing: the CPU backend counts no device memory.
func (*CPU) ResetPeakMemory() {}

// Device is nil: the CPU backend has no GPU.
func (*CPU) Device() Device { return nil }

// DeviceMemory is the caching allocator's counters (MemoryStats).
func (c *CUDA) DeviceMemory() (MemoryStats, bool) { return c.MemoryStats(), true }

// Device is the backend's GPU: itself.
func (c *CUDA) Device() Device { return c }
