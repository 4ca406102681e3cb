package tensor

import "fmt"

// mustHost panics unless t is a host tensor: the CPU backend cannot read
// device memory.
func mustHost(op string, ts ...*Tensor) {
	for _, t := range ts {
		if t != nil && t.dev != nil {
			panic(fmt.Sprintf("%s: %v is a device tensor; the CPU backend computes on host tensors only", op, t.Shape))
		}
	}
}

// Alloc returns a host tensor (Go zeroes it; the contract leaves it undefined).
func (c *CPU) Alloc(shape ...int) *Tensor { return New(shape...) }

// AllocAs returns a host tensor of the dtype.
func (c *CPU) AllocAs(dt DType, shape ...int) *Tensor { return NewAs(dt, shape...) }

// Zeros returns a zeroed host tensor.
func (c *CPU) Zeros(shape ...int) *Tensor { return New(shape...) }

// Free drops t's storage; the garbage collector reclaims it.
func (c *CPU) Free(t *Tensor) { mustHost("free", t); t.Detach() }

// Upload copies src into t (rounded to nearest even for a bfloat16 t).
func (c *CPU) Upload(t *Tensor, src []float32) {
	mustHost("upload", t)
	uploadLen(t, src)
	if t.dtype == BFloat16 {
		PackBF16(t.Half, src)
		return
	}
	copy(t.Data, src)
}

// Download copies t into dst.
func (c *CPU) Download(dst []float32, t *Tensor) {
	mustHost("download", t)
	downloadLen(dst, t)
	if t.dtype == BFloat16 {
		UnpackBF16(dst, t.Half)
		return
	}
	copy(dst, t.Data)
}

// Copy sets dst = src, converting to dst's dtype (rounding to nearest even
// into bfloat16).
func (c *CPU) Copy(dst, src *Tensor) {
	mustHost("copy", dst, src)
	copyLen(dst, src)
	switch {
	case dst.dtype == src.dtype && dst.dtype == BFloat16:
		copy(dst.Half, src.Half)
	case dst.dtype == src.dtype:
		copy(dst.Data, src.Data)
	case dst.dtype == BFloat16:
		PackBF16(dst.Half, src.Data)
	default:
		UnpackBF16(dst.Data, src.Half)
	}
}
