package tensor

// devStorage is a tensor's place in device memory: n float32 values at ptr,
// inside the allocation blk of the backend owner (shared by views).
type devStorage struct {
	ptr   devPtr
	n     int
	blk   *devBlock
	owner *CUDA
}

// view is n elements from off within d.
func (d *devStorage) view(off, n int) *devStorage {
	return &devStorage{ptr: d.ptr + devPtr(off)*4, n: n, blk: d.blk, owner: d.owner}
}
