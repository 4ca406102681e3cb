package tensor

import "testing"

// TestCUDAAllocatorReuses: a second pass over the same shapes takes every
// block from the cache, and freeing returns the bytes in use.
func TestCUDAAllocatorReuses(t *testing.T) {
	c := emuCUDA(t)
	pass := func() {
		ts := []*Tensor{c.Alloc(1000), c.Alloc(3, 77), c.Zeros(1 << 16)}
		for _, x := range ts {
			c.Free(x)
		}
	}
	pass()
	before := c.MemoryStats()
	pass()
	after := c.MemoryStats()
	if after.DriverAllocs != before.DriverAllocs || after.CacheHits != before.CacheHits+3 {
		t.Fatalf("second pass: %+v after %+v, want three cache hits and no driver allocation", after, before)
	}
	if after.InUse != before.InUse || after.Peak < 1<<18 {
		t.Fatalf("in use %d (was %d), peak %d", after.InUse, before.InUse, after.Peak)
	}
}
