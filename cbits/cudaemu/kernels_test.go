package cudaemu_test

import (
	"math"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/pplaunch/pplaunch/cbits"
)

// The kernels below use every builtin the contract lists. Each test computes
// its expectation on the host from the same inputs.

const axpySrc = `
extern "C" __global__ void axpy(float *y, const float *x, float a, int n) {
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n) y[i] += a * x[i];
}
`

func TestAxpy(t *testing.T) {
	c := load(t)
	k := kernel(t, c, axpySrc, "axpy")
	x, y := seq(1000, 1), seq(1000, 2)
	dx, dy := upload(t, c, x), upload(t, c, y)
	// 8 blocks of 128 threads: the last 24 threads are past n.
	must(t, c.Launch(k, [3]uint32{8, 1, 1}, [3]uint32{128, 1, 1}, 0, 0, dy, dx, float32(2), int32(1000)))
	got := download(t, c, dy, 1000)
	for i := range got {
		if want := y[i] + 2*x[i]; got[i] != want {
			t.Fatalf("y[%d] = %v, want %v", i, got[i], want)
		}
	}
}

// rotateSrc needs a real barrier: each thread reads the value its neighbour
// wrote before the barrier. Without one, thread i would read s[i+1] before or
// after thread i+1 wrote it, a race the launch checks report.
const rotateSrc = `
extern "C" __global__ void rotate(int *out, int base) {
	__shared__ int s[256];
	unsigned t = threadIdx.x;
	s[t] = base + (int)t;
	__syncthreads();
	int v = s[(t + 1) % blockDim.x];
	__syncthreads();
	s[t] = v * 2;
	__syncthreads();
	out[blockIdx.x * blockDim.x + t] = s[(t + blockDim.x - 1) % blockDim.x];
}
`

func TestSyncthreadsBarrier(t *testing.T) {
	c := load(t)
	k := kernel(t, c, rotateSrc, "rotate")
	const blocks, threads = 3, 256
	out, err := c.Malloc(4 * blocks * threads)
	must(t, err)
	defer c.Free(out)
	for _, base := range []int32{1000, 5000} {
		must(t, c.Launch(k, [3]uint32{blocks, 1, 1}, [3]uint32{threads, 1, 1}, 0, 0, out, base))
		got := downloadInts(t, c, out, blocks*threads)
		for i, g := range got {
			tid := int32(i % threads)
			// s[t-1] after the second step holds 2*(base + t).
			if want := 2 * (base + tid); g != want {
				t.Fatalf("base %d: out[%d] = %d, want %d", base, i, g, want)
			}
		}
	}
}

// reduceSrc: a shared-memory tree reduction in a 2-D grid, then warp
// shuffles (xor in one kernel, down in the other) for the last 32 lanes.
const reduceSrc = `
__device__ __forceinline__ float warp_sum_xor(float v) {
	for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
	return v;
}
__device__ __forceinline__ float warp_sum_down(float v) {
	for (int o = warpSize / 2; o > 0; o /= 2) v += __shfl_down_sync(0xffffffffu, v, o);
	return v;
}
// One block per (row, column chunk): rows along y, chunks of blockDim.x along x.
extern "C" __global__ void block_sum(float *out, const float *in, int cols) {
	__shared__ float s[1024];
	int row = blockIdx.y, col = blockIdx.x * blockDim.x + threadIdx.x;
	unsigned t = threadIdx.x;
	s[t] = col < cols ? in[row * cols + col] : 0.0f;
	__syncthreads();
	for (unsigned h = blockDim.x / 2; h >= 32; h /= 2) {
		if (t < h) s[t] += s[t + h];
		__syncthreads();
	}
	if (t < 32) {
		float v = warp_sum_xor(s[t]);
		if (t == 0) out[row * gridDim.x + blockIdx.x] = v;
	}
}
extern "C" __global__ void warp_sums(float *out, const float *in) {
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	float v = warp_sum_down(in[i]);
	float w = warp_sum_xor(in[i]);
	if ((threadIdx.x & 31) == 0) { out[2 * (i / 32)] = v; out[2 * (i / 32) + 1] = w; }
}
`

func TestSharedReductionAndShuffles(t *testing.T) {
	c := load(t)
	bs := kernel(t, c, reduceSrc, "block_sum")
	const rows, cols, threads = 5, 1000, 256
	chunks := (cols + threads - 1) / threads
	in := seq(rows*cols, 3)
	din := upload(t, c, in)
	dout := upload(t, c, make([]float32, rows*chunks))
	must(t, c.Launch(bs, [3]uint32{uint32(chunks), rows, 1}, [3]uint32{threads, 1, 1}, 0, 0, dout, din, int32(cols)))
	got := download(t, c, dout, rows*chunks)
	for r := 0; r < rows; r++ {
		for ch := 0; ch < chunks; ch++ {
			var want float64
			for j := ch * threads; j < (ch+1)*threads && j < cols; j++ {
				want += float64(in[r*cols+j])
			}
			if g := got[r*chunks+ch]; !near(g, float32(want), 1e-5) {
				t.Fatalf("row %d chunk %d: %v, want %v", r, ch, g, want)
			}
		}
	}

	ws := kernel(t, c, reduceSrc, "warp_sums")
	const n = 4 * 96
	win := seq(n, 4)
	dwin := upload(t, c, win)
	dwout := upload(t, c, make([]float32, 2*n/32))
	must(t, c.Launch(ws, [3]uint32{4, 1, 1}, [3]uint32{96, 1, 1}, 0, 0, dwout, dwin))
	wgot := download(t, c, dwout, 2*n/32)
	for w := 0; w < n/32; w++ {
		var want float64
		for l := 0; l < 32; l++ {
			want += float64(win[w*32+l])
		}
		if !near(wgot[2*w], float32(want), 1e-5) || !near(wgot[2*w+1], float32(want), 1e-5) {
			t.Fatalf("warp %d: down %v xor %v, want %v", w, wgot[2*w], wgot[2*w+1], want)
		}
	}
}

// shuffleSrc records what each lane reads, to check the source-lane rules.
const shuffleSrc = `
extern "C" __global__ void lanes(int *out, int delta) {
	int lane = threadIdx.x & 31, base = 4 * threadIdx.x;
	int v = 100 + (int)threadIdx.x;
	out[base + 0] = __shfl_xor_sync(0xffffffffu, v, delta);
	out[base + 1] = __shfl_down_sync(0xffffffffu, v, delta);
	out[base + 2] = __shfl_up_sync(0xffffffffu, v, delta, 16);
	out[base + 3] = __shfl_sync(0xffffffffu, v, lane + delta);
}
`

func TestShuffleLanes(t *testing.T) {
	c := load(t)
	k := kernel(t, c, shuffleSrc, "lanes")
	const threads = 64
	out := upload(t, c, make([]float32, 4*threads))
	for _, delta := range []int32{1, 5, 16} {
		must(t, c.Launch(k, [3]uint32{1, 1, 1}, [3]uint32{threads, 1, 1}, 0, 0, out, delta))
		got := downloadInts(t, c, out, 4*threads)
		for tid := int32(0); tid < threads; tid++ {
			lane, warp := tid%32, tid/32*32
			xor := 100 + warp + (lane ^ delta)
			down := 100 + tid
			if lane+delta < 32 {
				down = 100 + tid + delta
			}
			up := 100 + tid
			if lane%16 >= delta {
				up = 100 + tid - delta
			}
			idx := 100 + warp + (lane+delta)%32
			want := []int32{xor, down, up, idx}
			for j := range want {
				if g := got[4*tid+int32(j)]; g != want[j] {
					t.Fatalf("delta %d thread %d op %d: read %d, want %d", delta, tid, j, g, want[j])
				}
			}
		}
	}
}

// dynSrc reverses each block's slice through dynamic shared memory and
// writes every index of a 3-D block in a 2-D grid.
const dynSrc = `
extern __shared__ float dyn[];
extern "C" __global__ void reverse(float *out, const float *in) {
	unsigned t = threadIdx.x, n = blockDim.x, off = blockIdx.x * n;
	dyn[t] = in[off + t];
	__syncthreads();
	out[off + t] = dyn[n - 1 - t];
}
extern "C" __global__ void where(int *out) {
	unsigned tpb = blockDim.x * blockDim.y * blockDim.z;
	unsigned b = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
	unsigned t = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
	int *o = out + 6 * (b * tpb + t);
	o[0] = blockIdx.x; o[1] = blockIdx.y; o[2] = blockIdx.z;
	o[3] = threadIdx.x; o[4] = threadIdx.y; o[5] = threadIdx.z;
}
`

func TestDynamicSharedAndGrid(t *testing.T) {
	c := load(t)
	rev := kernel(t, c, dynSrc, "reverse")
	const blocks, threads = 3, 160
	in := seq(blocks*threads, 5)
	din, dout := upload(t, c, in), upload(t, c, make([]float32, blocks*threads))
	must(t, c.Launch(rev, [3]uint32{blocks, 1, 1}, [3]uint32{threads, 1, 1}, 4*threads, 0, dout, din))
	got := download(t, c, dout, blocks*threads)
	for b := 0; b < blocks; b++ {
		for i := 0; i < threads; i++ {
			if got[b*threads+i] != in[b*threads+threads-1-i] {
				t.Fatalf("block %d out[%d] = %v, want %v", b, i, got[b*threads+i], in[b*threads+threads-1-i])
			}
		}
	}

	wh := kernel(t, c, dynSrc, "where")
	grid, block := [3]uint32{3, 2, 2}, [3]uint32{8, 4, 2}
	n := 3 * 2 * 2 * 8 * 4 * 2
	out := upload(t, c, make([]float32, 6*n))
	must(t, c.Launch(wh, grid, block, 0, 0, out))
	ids := downloadInts(t, c, out, 6*n)
	i := 0
	for bz := int32(0); bz < 2; bz++ {
		for by := int32(0); by < 2; by++ {
			for bx := int32(0); bx < 3; bx++ {
				for tz := int32(0); tz < 2; tz++ {
					for ty := int32(0); ty < 4; ty++ {
						for tx := int32(0); tx < 8; tx++ {
							want := []int32{bx, by, bz, tx, ty, tz}
							for j, w := range want {
								if ids[6*i+j] != w {
									t.Fatalf("thread %d: ids %v, want %v", i, ids[6*i:6*i+6], want)
								}
							}
							i++
						}
					}
				}
			}
		}
	}
}

// TestLaunchErrors: what a GPU refuses, the emulator refuses with the same
// error, and the context stays usable.
func TestLaunchErrors(t *testing.T) {
	c := load(t)
	k := kernel(t, c, axpySrc, "axpy")
	p := upload(t, c, make([]float32, 4))
	for _, tc := range []struct {
		grid, block [3]uint32
		smem        int
		code        int
	}{
		{[3]uint32{1, 1, 1}, [3]uint32{1025, 1, 1}, 0, cbits.ErrInvalidConfiguration},
		{[3]uint32{1, 1, 1}, [3]uint32{32, 32, 2}, 0, cbits.ErrInvalidConfiguration},
		{[3]uint32{1, 1, 1}, [3]uint32{1, 1, 65}, 0, cbits.ErrInvalidConfiguration},
		{[3]uint32{0, 1, 1}, [3]uint32{32, 1, 1}, 0, cbits.ErrInvalidConfiguration},
		{[3]uint32{1, 65536, 1}, [3]uint32{32, 1, 1}, 0, cbits.ErrInvalidConfiguration},
		{[3]uint32{1, 1, 1}, [3]uint32{32, 1, 1}, 48*1024 + 1, cbits.ErrInvalidValue},
	} {
		err := c.Launch(k, tc.grid, tc.block, tc.smem, 0, p, p, float32(1), int32(4))
		var ce *cbits.CUDAError
		if !asCUDA(err, &ce) || ce.Code != tc.code || !strings.Contains(err.Error(), "cudaLaunchKernel") {
			t.Errorf("grid %v block %v smem %d: %v, want code %d", tc.grid, tc.block, tc.smem, err, tc.code)
		}
		if err := c.GetLastError(); err == nil || !strings.Contains(err.Error(), "cudaErrorInvalid") {
			t.Errorf("last error: %v", err)
		}
		if err := c.GetLastError(); err != nil {
			t.Fatalf("last error not cleared: %v", err)
		}
	}
	if err := c.Launch(k, [3]uint32{1, 1, 1}, [3]uint32{1024, 1, 1}, 0, 0, p, p, float32(1), int32(4)); err != nil {
		t.Fatalf("a 1024-thread block: %v", err)
	}
	if err := c.Launch(k, [3]uint32{1, 1, 1}, [3]uint32{32, 1, 1}, 0, 0, p, p, float32(1)); err == nil ||
		!strings.Contains(err.Error(), "kernel axpy has 4 parameters, the launch passed 3 arguments") {
		t.Errorf("too few arguments: %v", err)
	}
	c.GetLastError()
	if err := c.Launch(k, [3]uint32{1, 1, 1}, [3]uint32{32, 1, 1}, 0, 0, p, 3.0); err == nil || !strings.Contains(err.Error(), "argument 1 is float64") {
		t.Errorf("a float64 argument: %v", err)
	}
}

func asCUDA(err error, ce **cbits.CUDAError) bool {
	e, ok := err.(*cbits.CUDAError)
	if ok {
		*ce = e
	}
	return ok
}

// deadlockSrc: half a warp waits at __syncthreads, the other half at a
// __syncwarp that needs the first half. A GPU hangs; the emulator fails the
// launch, and the failure is sticky as a GPU's is, so it runs in a child.
const deadlockSrc = `
extern "C" __global__ void stuck(float *p) {
	if (threadIdx.x < 16) __syncthreads(); else __syncwarp();
	p[threadIdx.x] = 1.0f;
}
`

func TestDeadlockIsAnError(t *testing.T) {
	if !child("deadlock") {
		load(t) // skips where the emulator cannot load
		cmd := exec.Command(os.Args[0], "-test.run=^TestDeadlockIsAnError$", "-test.v")
		cmd.Env = append(os.Environ(), "CUDAEMU_TEST_CHILD=deadlock")
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "--- PASS: TestDeadlockIsAnError") {
			t.Fatalf("child: %v\n%s", err, out)
		}
		return
	}
	c := load(t)
	k := kernel(t, c, deadlockSrc, "stuck")
	p := upload(t, c, make([]float32, 32))
	err := c.Launch(k, [3]uint32{1, 1, 1}, [3]uint32{32, 1, 1}, 0, 0, p)
	if err == nil { // as on a GPU, a kernel's failure shows when it is waited for
		err = c.DeviceSynchronize()
	}
	if err == nil || !strings.Contains(err.Error(), "cudaErrorLaunchFailure (719)") || !strings.Contains(err.Error(), "16 of 32 threads wait at __syncthreads, 16 at a warp operation") {
		t.Fatalf("deadlock: %v", err)
	}
	if err := c.DeviceSynchronize(); err == nil || !strings.Contains(err.Error(), "cudaErrorLaunchFailure") {
		t.Fatalf("the failure is not sticky: %v", err)
	}
}

func downloadInts(t *testing.T, c *cbits.CUDALibs, p cbits.DevPtr, n int) []int32 {
	f := download(t, c, p, n)
	out := make([]int32, n)
	for i, v := range f {
		out[i] = int32(math.Float32bits(v))
	}
	return out
}

// TestOverrunFaults: device buffers end at a guard page, so a kernel that
// writes one element past a 256-byte buffer faults at once (a GPU reports an
// illegal address) instead of corrupting a neighbour. The fault kills the
// process, so the launch runs in a child.
func TestOverrunFaults(t *testing.T) {
	const src = `extern "C" __global__ void over(float *p, int n) { p[n] = 1.0f; }`
	if child("overrun") {
		c := load(t)
		k := kernel(t, c, src, "over")
		p := upload(t, c, make([]float32, 64))
		must(t, c.Launch(k, [3]uint32{1, 1, 1}, [3]uint32{32, 1, 1}, 0, 0, p, int32(63))) // in bounds
		os.Stdout.WriteString("in-bounds write done\n")
		c.Launch(k, [3]uint32{1, 1, 1}, [3]uint32{32, 1, 1}, 0, 0, p, int32(64))
		t.Fatal("writing past the buffer did not fault")
	}
	load(t) // skips where the emulator cannot load
	cmd := exec.Command(os.Args[0], "-test.run=^TestOverrunFaults$", "-test.v")
	cmd.Env = append(os.Environ(), "CUDAEMU_TEST_CHILD=overrun")
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "in-bounds write done") || !strings.Contains(string(out), "SIGSEGV") {
		t.Fatalf("child: %v, want a SIGSEGV\n%s", err, out)
	}
}
