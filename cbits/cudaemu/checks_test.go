package cudaemu_test

import (
	"fmt"
	"math"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"unsafe"

	"github.com/pplaunch/pplaunch/cbits"
)

// TestNewDeviceMemoryIsNaN: cudaMalloc gives 0xff bytes, NaN as floats, not
// the zeros a fresh mapping has: a GPU gives whatever the memory held.
func TestNewDeviceMemoryIsNaN(t *testing.T) {
	c := load(t)
	p, err := c.Malloc(4 * 100)
	must(t, err)
	defer c.Free(p)
	for i, v := range download(t, c, p, 100) {
		if !math.IsNaN(float64(v)) || math.Float32bits(v) != 0xffffffff {
			t.Fatalf("new device memory [%d] = %#x, want 0xffffffff", i, math.Float32bits(v))
		}
	}
}

// orderSrc records, through counters in pinned host memory (which the checks
// do not watch), the order blocks start in and the order block 0's threads
// reach two points a barrier apart.
const orderSrc = `
extern "C" __global__ void order(int *blocks, int *threads, int *count) {
	if (threadIdx.x == 0) blocks[count[0]++] = blockIdx.x;
	if (blockIdx.x == 0) threads[count[1]++] = threadIdx.x;
	__syncthreads();
	if (blockIdx.x == 0) threads[blockDim.x + count[2]++] = threadIdx.x;
}
`

// TestOrdersFollowTheSeed: blocks and threads run in shuffled orders that
// CUDAEMU_SEED fixes: the same seed, the same orders; another seed, others;
// and block 0's threads pass the two points in different orders.
func TestOrdersFollowTheSeed(t *testing.T) {
	const blocks, threads = 16, 64
	if child("order") {
		c := load(t)
		k := kernel(t, c, orderSrc, "order")
		h, err := c.MallocHost(4 * (blocks + 2*threads + 3))
		must(t, err)
		defer c.FreeHost(h)
		buf := unsafe.Slice((*int32)(h), blocks+2*threads+3)
		clear(buf)
		base := cbits.DevPtr(uintptr(h))
		must(t, c.Launch(k, [3]uint32{blocks, 1, 1}, [3]uint32{threads, 1, 1}, 0, 0, base, base+4*blocks, base+4*(blocks+2*threads)))
		must(t, c.DeviceSynchronize())
		fmt.Printf("ORDER %v %v %v\n", buf[:blocks], buf[blocks:blocks+threads], buf[blocks+threads:blocks+2*threads])
		return
	}
	load(t) // skips where the emulator cannot load
	run := func(seed string) []string {
		cmd := exec.Command(os.Args[0], "-test.run=^TestOrdersFollowTheSeed$", "-test.v")
		cmd.Env = append(os.Environ(), "CUDAEMU_TEST_CHILD=order", "CUDAEMU_SEED="+seed)
		out, err := cmd.CombinedOutput()
		i := strings.Index(string(out), "ORDER ")
		if err != nil || i < 0 {
			t.Fatalf("child with CUDAEMU_SEED=%s: %v\n%s", seed, err, out)
		}
		line := strings.SplitN(string(out[i+len("ORDER "):]), "\n", 2)[0]
		return strings.SplitAfter(line, "] ")
	}
	one, again, two := run("1"), run("1"), run("2")
	if !slices.Equal(one, again) {
		t.Fatalf("CUDAEMU_SEED=1 twice: %v then %v", one, again)
	}
	if slices.Equal(one, two) {
		t.Fatalf("CUDAEMU_SEED=1 and 2 give the same orders %v", one)
	}
	ascending := func(n int) string {
		s := make([]string, n)
		for i := range s {
			s[i] = fmt.Sprint(i)
		}
		return "[" + strings.Join(s, " ") + "]"
	}
	if strings.TrimSpace(one[0]) == ascending(blocks) || strings.TrimSpace(one[1]) == ascending(threads) {
		t.Fatalf("blocks or threads in index order: %v", one)
	}
	if strings.TrimSpace(one[1]) == strings.TrimSpace(one[2]) {
		t.Fatalf("block 0's threads reach both points in one order: %v", one)
	}
	t.Logf("CUDAEMU_SEED=1: blocks %s, threads %s then %s", one[0], one[1], one[2])
}

// warpSrc reduces each warp's values through shared memory, its lanes
// ordered by __syncwarp alone, as compute-sanitizer's racecheck allows.
const warpSrc = `
extern "C" __global__ void warp_tree(float *out, const float *in) {
	__shared__ float s[64];
	unsigned t = threadIdx.x, lane = t & 31, w = t >> 5;
	float *ws = s + 32 * w;
	ws[lane] = in[blockIdx.x * blockDim.x + t];
	__syncwarp();
	for (unsigned h = 16; h > 0; h >>= 1) {
		float v = lane < h ? ws[lane] + ws[lane + h] : 0.0f;
		__syncwarp();
		if (lane < h) ws[lane] = v;
		__syncwarp();
	}
	if (lane == 0) out[blockIdx.x * 2 + w] = ws[0];
}
`

// TestSyncwarpOrdersSharedMemory: a warp-synchronous reduction passes the
// race check and sums right.
func TestSyncwarpOrdersSharedMemory(t *testing.T) {
	c := load(t)
	k := kernel(t, c, warpSrc, "warp_tree")
	in := seq(3*64, 9)
	din, dout := upload(t, c, in), upload(t, c, make([]float32, 6))
	must(t, c.Launch(k, [3]uint32{3, 1, 1}, [3]uint32{64, 1, 1}, 0, 0, dout, din))
	got := download(t, c, dout, 6)
	for w := range got {
		var want float64
		for _, v := range in[32*w : 32*w+32] {
			want += float64(v)
		}
		if !near(got[w], float32(want), 1e-5) {
			t.Fatalf("warp %d: %v, want %v", w, got[w], want)
		}
	}
}

// TestDynamicSharedOverrunIsReported: a launch that asks for less dynamic
// shared memory than its kernel uses fails, naming the offset and the size
// asked for (a GPU reads or writes past the block's allocation). The failure
// is sticky, so it runs in a child.
func TestDynamicSharedOverrunIsReported(t *testing.T) {
	const blocks, threads = 2, 64
	if child("dynoob") {
		c := load(t)
		k := kernel(t, c, dynSrc, "reverse")
		din, dout := upload(t, c, seq(blocks*threads, 5)), upload(t, c, make([]float32, blocks*threads))
		must(t, c.Launch(k, [3]uint32{blocks, 1, 1}, [3]uint32{threads, 1, 1}, 4*(threads-1), 0, dout, din))
		fmt.Printf("REPORT: %v\n", c.DeviceSynchronize())
		return
	}
	load(t) // skips where the emulator cannot load
	cmd := exec.Command(os.Args[0], "-test.run=^TestDynamicSharedOverrunIsReported$", "-test.v")
	cmd.Env = append(os.Environ(), "CUDAEMU_TEST_CHILD=dynoob")
	out, err := cmd.CombinedOutput()
	want := "thread (63,0,0) of block"
	if err != nil || !strings.Contains(string(out), want) || !strings.Contains(string(out), "writes 4 bytes at dynamic shared memory+252, past the 252 bytes the launch asked for") {
		t.Fatalf("child: %v, want a report of %q writing past 252 bytes\n%s", err, want, out)
	}
}
