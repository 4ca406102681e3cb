package tensor

// devStorage is a tensor's place in device memory: n float32 values at ptr,
// inside an allocation blk that views share.
type devStorage struct {
	ptr uintptr
	n   int
	blk any
}

// view is n elements from off within d.
func (d *devStorage) view(off, n int) *devStorage {
	return &devStorage{ptr: d.ptr + uintptr(off)*4, n: n, blk: d.blk}
}
