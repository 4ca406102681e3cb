package tensor

import (
	"fmt"
	"slices"
	"unsafe"
)

// Alloc returns a float32 device tensor from the caching allocator (contents undefined).
func (c *CUDA) Alloc(shape ...int) *Tensor { return c.AllocAs(Float32, shape...) }

// AllocAs returns a device tensor of the dtype from the caching allocator
// (contents undefined).
func (c *CUDA) AllocAs(dt DType, shape ...int) *Tensor {
	n := numel(shape)
	b, err := c.alloc.get(max(n, 1) * dt.Size())
	if err != nil {
		panic(fmt.Sprintf("cuda backend: alloc %v %v: %v", shape, dt, err))
	}
	return &Tensor{Shape: slices.Clone(shape), dtype: dt, dev: &devStorage{ptr: b.ptr, n: n, size: dt.Size(), blk: b, owner: c}}
}

// Zeros returns a zeroed float32 device tensor.
func (c *CUDA) Zeros(shape ...int) *Tensor {
	t := c.Alloc(shape...)
	c.memset(t.dev.ptr, int(t.Bytes()))
	return t
}

func (c *CUDA) memset(p devPtr, bytes int) {
	if bytes > 0 {
		c.dev.enqueue("memset", func() error { return c.dev.api.MemsetAsync(p, 0, bytes, c.dev.stream) })
	}
}

// Free gives t's block back to the cache. t must be the tensor Alloc returned
// (or a reshape of it), not a view into part of it.
func (c *CUDA) Free(t *Tensor) {
	p := c.ptrAny("free", t)
	if p != t.dev.blk.ptr {
		panic(fmt.Sprintf("free: %v is a view into another tensor", t.Shape))
	}
	c.alloc.put(t.dev.blk)
	t.Detach()
}

// tmp is scratch device memory for n floats, given back with c.alloc.put once
// the launches that use it are queued (the stream orders any reuse after them).
func (c *CUDA) tmp(n int) *devBlock {
	b, err := c.alloc.get(max(n, 1) * 4)
	if err != nil {
		panic(fmt.Sprintf("cuda backend: scratch of %d floats: %v", n, err))
	}
	return b
}

// upload32 copies host words to a fresh scratch block.
func (c *CUDA) upload32(op string, p unsafe.Pointer, n int) *devBlock {
	b := c.tmp(n)
	if n > 0 {
		c.dev.must(op, func() error { return c.dev.api.MemcpyHtoDAsync(b.ptr, p, n*4, c.dev.stream) })
	}
	return b
}

// uploadInts copies int32 ids to the device.
func (c *CUDA) uploadInts(op string, ids []int32) *devBlock {
	if len(ids) == 0 {
		return c.tmp(1)
	}
	return c.upload32(op, unsafe.Pointer(&ids[0]), len(ids))
}

// Upload copies src into t (rounded to nearest even for a bfloat16 t).
func (c *CUDA) Upload(t *Tensor, src []float32) {
	p := c.ptrAny("upload", t)
	uploadLen(t, src)
	if t.dtype == BFloat16 && len(src) > 0 {
		// The host rounds: the copy is pageable and synchronous, so the
		// packed values need not outlive the call.
		h := make([]uint16, len(src))
		PackBF16(h, src)
		c.dev.must("upload", func() error {
			if err := c.dev.api.MemcpyHtoDAsync(p, unsafe.Pointer(&h[0]), len(h)*2, c.dev.stream); err != nil {
				return err
			}
			return c.dev.api.StreamSynchronize(c.dev.stream)
		})
		return
	}
	if len(src) > 0 {
		c.dev.must("upload", func() error {
			return c.dev.api.MemcpyHtoDAsync(p, unsafe.Pointer(&src[0]), len(src)*4, c.dev.stream)
		})
	}
}

// Download copies t to dst, waiting for the work that writes t.
func (c *CUDA) Download(dst []float32, t *Tensor) {
	p := c.ptrAny("download", t)
	downloadLen(dst, t)
	if t.dtype == BFloat16 && len(dst) > 0 {
		h := make([]uint16, len(dst))
		c.download(unsafe.Pointer(&h[0]), p, len(h)*2)
		UnpackBF16(dst, h)
		return
	}
	if len(dst) > 0 {
		c.download(unsafe.Pointer(&dst[0]), p, len(dst)*4)
	}
}

func (c *CUDA) download(dst unsafe.Pointer, p devPtr, bytes int) {
	c.dev.must("download", func() error {
		if err := c.dev.api.MemcpyDtoHAsync(dst, p, bytes, c.dev.stream); err != nil {
			return err
		}
		return c.dev.api.StreamSynchronize(c.dev.stream)
	})
}

// Copy sets dst = src on the device: a copy of the bytes within one dtype, a
// conversion kernel between dtypes (rounding to nearest even into bfloat16).
func (c *CUDA) Copy(dst, src *Tensor) {
	d, s := c.ptrAny("copy", dst), c.ptrAny("copy", src)
	copyLen(dst, src)
	if dst.dtype != src.dtype {
		if n := dst.Len(); n > 0 {
			c.launch("convert", c.chunkGrid(n), blk(elemBlock), 0, d, s, int64(n), dtBits(dst, src))
		}
		return
	}
	if n := int(dst.Bytes()); n > 0 && d != s {
		c.dev.enqueue("copy", func() error { return c.dev.api.MemcpyDtoDAsync(d, s, n, c.dev.stream) })
	}
}
