package tensor

import (
	"fmt"
	"math/bits"
	"sync"
)

// devBlock is one allocation from the caching allocator.
type devBlock struct {
	ptr   devPtr
	bytes int // its size class
	freed bool
}

// allocator is a caching device allocator: freed blocks go to a free list of
// their size class and are handed out again, so a training step that repeats
// the shapes of the one before asks the driver for nothing. All compute runs
// on one stream in order, so a block freed after the launches that use it may
// be reused by any later launch at once. The staging copies on the other
// stream (cuda_stage.go) keep this true: each waits for the compute queued
// before it, and a tensor a copy reads is freed only after the copy is seen
// done.
type allocator struct {
	dev *device

	mu                      sync.Mutex
	free                    map[int][]*devBlock // by size class
	inUse, peak, reserved   int64
	driverAllocs, cacheHits int64
}

func newAllocator(d *device) *allocator {
	return &allocator{dev: d, free: map[int][]*devBlock{}}
}

// sizeClass rounds bytes up to 512 B, or above 4 KiB to an eighth of its power
// of two, so no block wastes more than an eighth of what it holds.
func sizeClass(bytes int) int {
	if bytes <= 4096 {
		return max(512, (bytes+511)&^511)
	}
	g := 1 << (bits.Len(uint(bytes)) - 4) // an eighth of the largest power of two in bytes
	return (bytes + g - 1) &^ (g - 1)
}

// get returns a block of at least bytes. When the driver is out of memory it
// releases every cached block and tries once more.
func (a *allocator) get(bytes int) (*devBlock, error) {
	c := sizeClass(bytes)
	a.mu.Lock()
	defer a.mu.Unlock()
	if l := a.free[c]; len(l) > 0 {
		b := l[len(l)-1]
		a.free[c] = l[:len(l)-1]
		b.freed = false
		a.cacheHits++
		a.use(int64(c))
		return b, nil
	}
	var p devPtr
	err := a.dev.call(func() (err error) { p, err = a.dev.api.Malloc(c); return err })
	if err != nil {
		a.releaseCached()
		if err2 := a.dev.call(func() (err error) { p, err = a.dev.api.Malloc(c); return err }); err2 != nil {
			return nil, fmt.Errorf("device %d: %d bytes in use, %d reserved: %w", a.dev.id, a.inUse, a.reserved, err2)
		}
	}
	a.driverAllocs++
	a.reserved += int64(c)
	a.use(int64(c))
	return &devBlock{ptr: p, bytes: c}, nil
}

func (a *allocator) use(n int64) {
	a.inUse += n
	a.peak = max(a.peak, a.inUse)
}

// put returns a block to its free list.
func (a *allocator) put(b *devBlock) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if b.freed {
		panic(fmt.Sprintf("cuda backend: block %#x freed twice", b.ptr))
	}
	b.freed = true
	a.inUse -= int64(b.bytes)
	a.free[b.bytes] = append(a.free[b.bytes], b)
}

// releaseCached gives every cached block back to the driver (a.mu held).
func (a *allocator) releaseCached() {
	_ = a.dev.call(func() error {
		if err := a.dev.api.StreamSynchronize(a.dev.stream); err != nil {
			return err
		}
		for c, l := range a.free {
			for _, b := range l {
				_ = a.dev.api.Free(b.ptr)
				a.reserved -= int64(c)
			}
		}
		return nil
	})
	a.free = map[int][]*devBlock{}
}

// MemoryStats are the CUDA backend's device memory counters in bytes: held by
// live tensors now (InUse) and at most since the start or ResetPeakMemory
// (Peak), taken from the driver (Reserved, cached blocks included); and how
// many blocks came from the driver and how many from the cache.
type MemoryStats struct {
	InUse, Peak, Reserved   int64
	DriverAllocs, CacheHits int64
}

func (a *allocator) stats() MemoryStats {
	a.mu.Lock()
	defer a.mu.Unlock()
	return MemoryStats{InUse: a.inUse, Peak: a.peak, Reserved: a.reserved, DriverAllocs: a.driverAllocs, CacheHits: a.cacheHits}
}
