package tensor

// devStorage is a tensor's place in device memory: n values of size bytes
// each at ptr, inside the allocation blk of the backend owner (shared by views).
type devStorage struct {
	ptr   devPtr
	n     int
	size  int // bytes per element: 4 for float32, 2 for bfloat16
	blk   *devBlock
	owner *CUDA
}

// view is n elements from off within d.
func (d *devStorage) view(off, n int) *devStorage {
	return &devStorage{ptr: d.ptr + devPtr(off*d.size), n: n, size: d.size, blk: d.blk, owner: d.owner}
}
