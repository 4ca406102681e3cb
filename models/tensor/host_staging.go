package tensor

// HostStaging is nil: the CPU backend's tensors are host memory, which a
// transport reads and writes directly.
func (*CPU) HostStaging() PinnedStaging { return nil }

// HostStaging is the backend's copy stream and pinned buffers: itself.
func (c *CUDA) HostStaging() PinnedStaging { return c }
