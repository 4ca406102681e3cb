package tensor

// What a communicator that moves device memory (collective.NewNCCL) needs
// from the CUDA backend: its device thread, where every CUDA and NCCL call
// for the GPU is made, its compute stream, and a tensor's device address.
// *CUDA is a collective.DeviceThread through Call and ComputeStream.

// Call runs f on the device's thread after everything queued before it and
// returns its error (or that of a queued operation that failed before).
func (c *CUDA) Call(f func() error) error { return c.dev.call(f) }

// ComputeStream is the cudaStream_t the backend computes on.
func (c *CUDA) ComputeStream() uintptr { return uintptr(c.dev.stream) }

// DevicePtr is the device address of t, a tensor of this backend of either
// dtype, for collective.OnDevice(dtype, c.DevicePtr(t), t.Len(), t.Shape...)
// with the collective dtype of t's (a bfloat16 tensor goes as ncclBfloat16).
func (c *CUDA) DevicePtr(t *Tensor) uintptr { return uintptr(c.ptrAny("device pointer", t)) }
