package tensor

import (
	"errors"
	"fmt"

	"github.com/pplaunch/pplaunch/cbits"
)

// CUDAOptions are the CUDA backend's choices.
type CUDAOptions struct {
	// TF32 lets cuBLAS use TF32 tensor cores for float32 products (as
	// torch.backends.cuda.matmul.allow_tf32); off, products are full float32.
	TF32 bool
	// KernelCache is where compiled kernels are kept: "" for KernelCacheDir(),
	// "-" for no disk cache.
	KernelCache string
}

// CUDA is the GPU backend: tensors in device memory from a caching allocator,
// matrix products by cuBLAS, the rest by NVRTC-compiled kernels from
// kernels/*.cu, all on one stream of one device driven from one locked OS
// thread. Reductions have fixed orders and no atomics, so results do not
// depend on the run. The methods are safe for use from several goroutines;
// the device serialises them.
type CUDA struct {
	dev   *device
	alloc *allocator
	k     *kernels
	sms   int
	name  string
	stg   stager // copy stream and pinned buffers (cuda_stage.go)
}

// loadCUDA finds and loads the NVIDIA libraries (cuda_cbits.go).
var loadCUDA = func() (cudaAPI, error) { return nil, errors.New("no CUDA library binding in this build") }

// NewCUDA opens GPU device (an index among the visible ones). Where a library,
// the driver or a GPU is missing, the error names what was looked for and where.
func NewCUDA(device int, opts CUDAOptions) (*CUDA, error) {
	api, err := loadCUDA()
	if err != nil {
		return nil, fmt.Errorf("cuda backend: %w", err)
	}
	return newCUDAWith(api, device, opts)
}

func newCUDAWith(api cudaAPI, device int, opts CUDAOptions) (*CUDA, error) {
	n, err := api.DeviceCount()
	if err != nil {
		return nil, fmt.Errorf("cuda backend: %w", err)
	}
	if device < 0 || device >= n {
		return nil, fmt.Errorf("cuda backend: device %d requested, but %d visible (check CUDA_VISIBLE_DEVICES)", device, n)
	}
	d, err := startDevice(api, device, opts.TF32)
	var ce *cbits.CUDAError
	if errors.As(err, &ce) && ce.Code == cbits.ErrDevicesUnavailable {
		return nil, fmt.Errorf("cuda backend: %w: GPU %d takes one process at a time (exclusive-process compute mode) and another has it; "+
			"give each rank a GPU of its own, start an MPS server (nvidia-cuda-mps-control -d), or make the mode DEFAULT (nvidia-smi -c DEFAULT)", err, device)
	}
	if err != nil {
		return nil, fmt.Errorf("cuda backend: %w", err)
	}
	var major, minor, sms int
	err = d.call(func() (err error) {
		if major, err = api.DeviceAttribute(attrComputeCapabilityMajor, device); err != nil {
			return err
		}
		if minor, err = api.DeviceAttribute(attrComputeCapabilityMinor, device); err != nil {
			return err
		}
		sms, err = api.DeviceAttribute(attrMultiProcessorCount, device)
		return err
	})
	if err != nil {
		d.stop()
		return nil, fmt.Errorf("cuda backend: device %d attributes: %w", device, err)
	}
	cache := opts.KernelCache
	switch cache {
	case "":
		cache = KernelCacheDir()
	case "-":
		cache = ""
	}
	c := &CUDA{dev: d, alloc: newAllocator(d), sms: max(sms, 1),
		k:    &kernels{dev: d, arch: fmt.Sprintf("sm_%d%d", major, minor), cacheDir: cache},
		name: fmt.Sprintf("cuda:%d/sm_%d%d/cublas", device, major, minor)}
	if opts.TF32 {
		c.name += "+tf32"
	}
	return c, nil
}

// Name says which device and library compute, e.g. "cuda:0/sm_90/cublas".
func (c *CUDA) Name() string { return c.name }

// Arch is the architecture the kernels are compiled for, e.g. "sm_90".
func (c *CUDA) Arch() string { return c.k.arch }

// MemoryStats reports the caching allocator's counters.
func (c *CUDA) MemoryStats() MemoryStats { return c.alloc.stats() }

// ResetPeakMemory starts the peak over from the bytes in use now.
func (c *CUDA) ResetPeakMemory() {
	c.alloc.mu.Lock()
	c.alloc.peak = c.alloc.inUse
	c.alloc.mu.Unlock()
}

// Sync waits until every operation submitted so far has finished on the GPU.
func (c *CUDA) Sync() error {
	return c.dev.call(func() error { return c.dev.api.StreamSynchronize(c.dev.stream) })
}

// Close waits for the GPU, frees every cached block and the kernels, and ends
// the device thread. Tensors of the backend must not be used afterwards.
func (c *CUDA) Close() error {
	err := c.Sync()
	c.alloc.mu.Lock()
	c.alloc.releaseCached()
	c.alloc.mu.Unlock()
	c.k.unload()
	c.closeStaging()
	c.dev.stop()
	return err
}

// ptr is t's device address, checking that this backend made t.
func (c *CUDA) ptr(op string, t *Tensor) devPtr {
	if t != nil && t.dtype != Float32 {
		panic(fmt.Sprintf("%s: %v: this operation of the CUDA backend takes float32 tensors", op, t))
	}
	return c.ptrAny(op, t)
}

// ptrAny is t's device address for an operation that takes any dtype.
func (c *CUDA) ptrAny(op string, t *Tensor) devPtr {
	if t == nil {
		return 0
	}
	if t.dev == nil {
		if t.Data == nil && t.Half == nil {
			panic(fmt.Sprintf("%s: tensor %v has no storage (freed or released)", op, t.Shape))
		}
		panic(fmt.Sprintf("%s: %v is a host tensor; the CUDA backend computes on its own tensors (Alloc, then Upload)", op, t.Shape))
	}
	if t.dev.owner != c {
		panic(fmt.Sprintf("%s: tensor %v belongs to another CUDA backend", op, t.Shape))
	}
	return t.dev.ptr
}

// dtBits is a kernel's dt argument (kernels/00_common.cu): bit k is set where
// ts[k], the kernel's k-th void pointer, is bfloat16 (nil counts as float32).
func dtBits(ts ...*Tensor) int32 {
	var b int32
	for k, t := range ts {
		if t != nil && t.dtype == BFloat16 {
			b |= 1 << k
		}
	}
	return b
}

// launch runs kernel name on the stream. A failure panics with the kernel's name.
func (c *CUDA) launch(name string, grid, block [3]uint32, smem int, args ...any) {
	if err := checkBlock(name, block); err != nil {
		panic(fmt.Sprintf("cuda backend: %v", err))
	}
	kn, err := c.k.get(name)
	if err != nil {
		panic(fmt.Sprintf("cuda backend: %v", err))
	}
	c.dev.enqueue(name, func() error { return c.dev.api.Launch(kn, grid, block, smem, c.dev.stream, args...) })
}

// elementGrid is the grid of a grid-stride elementwise kernel over n elements
// with blocks of elemBlock threads: enough blocks to fill the GPU several
// times, never more than the work. Elementwise results do not depend on it.
func (c *CUDA) elementGrid(n int) [3]uint32 {
	g := min((n+elemBlock-1)/elemBlock, 32*c.sms)
	return [3]uint32{uint32(max(g, 1)), 1, 1}
}

// chunkGrid is elementGrid for a kernel that takes rowChunk elements a
// thread (GRID_CHUNKS in kernels/00_common.cu).
func (c *CUDA) chunkGrid(n int) [3]uint32 { return c.elementGrid((n + rowChunk - 1) / rowChunk) }

// Thread-block sizes: elementwise kernels, row kernels (LayerNorm and
// cross-entropy: a warp per row, rowBlock/32 rows a block; the attention's
// softmax: a block per row), and column kernels (a thread per column); rowChunk
// is the elements a lane of a row kernel takes at a time (CHUNK in
// kernels/00_common.cu).
const (
	elemBlock = 256
	rowBlock  = 256
	colBlock  = 128
	rowChunk  = 8
)

// rowGrid is the grid of a warp-per-row kernel over n rows.
func rowGrid(n int) [3]uint32 {
	per := rowBlock / 32
	return [3]uint32{uint32((n + per - 1) / per), 1, 1}
}

func blk(n int) [3]uint32 { return [3]uint32{uint32(n), 1, 1} }

var _ Backend = (*CUDA)(nil)
