package cudaemu_test

import (
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"unsafe"

	"github.com/pplaunch/pplaunch/cbits"
)

// The emulator as a witness of the project's kernels: each planted bug is a
// mutation of the real kernel source that a GPU would run wrong (or right by
// luck), and the emulator must report it; the unmutated kernels must pass the
// same launches and give the right numbers.

// kernelSource is models/tensor/kernels/*.cu joined in name order, the one
// translation unit the CUDA backend compiles (read from the tree, since this
// package imports nothing of the project but cbits).
func kernelSource(t *testing.T) string {
	t.Helper()
	names, err := filepath.Glob("../../models/tensor/kernels/*.cu")
	if err != nil || len(names) == 0 {
		t.Fatalf("no kernel sources under ../../models/tensor/kernels: %v", err)
	}
	sort.Strings(names)
	var b strings.Builder
	for _, n := range names {
		src, err := os.ReadFile(n)
		if err != nil {
			t.Fatal(err)
		}
		b.WriteString("// ---- " + filepath.Base(n) + "\n")
		b.Write(src)
		b.WriteString("\n")
	}
	return b.String()
}

// mutate replaces the one occurrence of old in src, or fails saying the
// kernels changed under the test.
func mutate(t *testing.T, src, old, new string) string {
	t.Helper()
	if n := strings.Count(src, old); n != 1 {
		t.Fatalf("the kernel source has %d occurrences of %q, want 1: update the planted bug to the kernels", n, old)
	}
	return strings.Replace(src, old, new, 1)
}

// plantedBugs: each removes or changes what keeps a real kernel correct.
var plantedBugs = []struct {
	name   string
	old    string // replaced in the real source
	new    string
	launch func(t *testing.T, c *cbits.CUDALibs, src string) error
	want   []string // in the emulator's report
}{
	{
		// block_sum's first barrier keeps a second call from overwriting
		// sh while other warps still read the first call's sums.
		name: "reuse barrier removed from block_sum",
		old:  "\t__syncthreads(); // sh may still be read from a previous call\n",
		new:  "",
		launch: func(t *testing.T, c *cbits.CUDALibs, src string) error {
			_, err := causalSoftmax(t, c, src)
			return err
		},
		want: []string{"kernel causal_softmax_forward", "shared-memory race", "at causal_softmax_forward::sh+", "thread (", "CUDAEMU_SEED=1"},
	},
	{
		// Summing the other blocks' partials in the last block needs a
		// grid-wide barrier (or a fence and a counter): blocks run in no order.
		name: "last block sums the partials with no grid-wide sync",
		old:  "\tif (threadIdx.x == 0) ((double*)part)[blockIdx.x] = t;\n}",
		new: "\tif (threadIdx.x == 0) ((double*)part)[blockIdx.x] = t;\n" +
			"\tif (threadIdx.x == 0 && blockIdx.x == gridDim.x - 1) {\n" +
			"\t\tdouble all = 0.0;\n" +
			"\t\tfor (unsigned b = 0; b < gridDim.x; b++) all += ((double*)part)[b];\n" +
			"\t\t((double*)part)[gridDim.x] = all;\n" +
			"\t}\n}",
		launch: func(t *testing.T, c *cbits.CUDALibs, src string) error {
			_, err := sumSquares(t, c, src, false)
			return err
		},
		want: []string{"kernel sumsq_partial", "device memory shared by blocks", "block (3,0,0)", "no grid-wide barrier", "CUDAEMU_SEED=1"},
	},
	{
		// Summing all 32 slots reads the slots of warps the block does not
		// have: zeros on the old emulator, garbage on a GPU.
		name: "block_sum reads slots no warp wrote",
		old:  "\tfloat t = 0.0f;\n\tfor (int i = 0; i < nw; i++) t += sh[i];",
		new:  "\tfloat t = 0.0f;\n\tfor (int i = 0; i < 32; i++) t += sh[i];",
		launch: func(t *testing.T, c *cbits.CUDALibs, src string) error {
			_, err := causalSoftmax(t, c, src)
			return err
		},
		want: []string{"kernel causal_softmax_forward", "uninitialised shared memory", "reads causal_softmax_forward::sh+32", "no thread of the block has written"},
	},
}

// TestPlantedKernelBugsAreReported: each planted bug fails its launch with a
// report naming the kernel, the address and the threads or blocks. A failed
// launch is sticky, as on a GPU, so each runs in a child process.
func TestPlantedKernelBugsAreReported(t *testing.T) {
	if i := os.Getenv("CUDAEMU_TEST_PLANTED"); i != "" {
		var k int
		fmt.Sscan(i, &k)
		bug := plantedBugs[k]
		c := load(t)
		err := bug.launch(t, c, mutate(t, kernelSource(t), bug.old, bug.new))
		if err == nil {
			t.Fatalf("%s: the emulator reported nothing", bug.name)
		}
		fmt.Printf("REPORT: %v\n", err)
		return
	}
	load(t) // skips where the emulator cannot load
	for i, bug := range plantedBugs {
		t.Run(bug.name, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^TestPlantedKernelBugsAreReported$", "-test.v")
			cmd.Env = append(os.Environ(), fmt.Sprintf("CUDAEMU_TEST_PLANTED=%d", i), "CUDAEMU_SEED=")
			out, err := cmd.CombinedOutput()
			if err != nil || !strings.Contains(string(out), "REPORT: ") {
				t.Fatalf("child: %v\n%s", err, out)
			}
			report := string(out[strings.Index(string(out), "REPORT: "):])
			t.Log(strings.SplitN(report, "\n", 2)[0])
			for _, w := range bug.want {
				if !strings.Contains(string(out), w) {
					t.Errorf("the report lacks %q:\n%s", w, report)
				}
			}
		})
	}
}

// TestRealKernelsPassTheChecks: the unmutated kernels run the planted bugs'
// launches with every check on, in shuffled block and thread orders, and give
// the right numbers.
func TestRealKernelsPassTheChecks(t *testing.T) {
	c := load(t)
	src := kernelSource(t)
	p, err := causalSoftmax(t, c, src)
	must(t, err)
	x := seq(softmaxT*softmaxT, 7)
	for r := 0; r < softmaxT; r++ {
		row, mx := x[r*softmaxT:(r+1)*softmaxT], math.Inf(-1)
		for _, v := range row[:r+1] {
			mx = math.Max(mx, float64(v))
		}
		var s float64
		for _, v := range row[:r+1] {
			s += math.Exp(float64(v) - mx)
		}
		for j, v := range p[r*softmaxT : (r+1)*softmaxT] {
			want := 0.0
			if j <= r {
				want = math.Exp(float64(row[j])-mx) / s
			}
			if !near(v, float32(want), 1e-5) {
				t.Fatalf("causal softmax row %d column %d: %v, want %v", r, j, v, want)
			}
		}
	}
	got, err := sumSquares(t, c, src, true)
	must(t, err)
	var want float64
	for _, v := range seq(1000, 8) {
		want += float64(v) * float64(v)
	}
	if math.Abs(got-want) > 1e-9*want {
		t.Errorf("sum of squares %v, want %v", got, want)
	}
}

// softmaxT is the rows and columns causalSoftmax runs over.
const softmaxT = 40

// causalSoftmax runs causal_softmax_forward of src over the softmaxT rows of
// softmaxT scores of one head with 256 threads (8 warps) a block, each row
// reduced by block_max and block_sum, and returns the probabilities.
func causalSoftmax(t *testing.T, c *cbits.CUDALibs, src string) ([]float32, error) {
	k := kernels(t, c, src, "causal_softmax_forward")[0]
	p := upload(t, c, seq(softmaxT*softmaxT, 7))
	if err := c.Launch(k, [3]uint32{softmaxT, 1, 1}, [3]uint32{256, 1, 1}, 0, 0, p, int32(softmaxT)); err != nil {
		return nil, err
	}
	if err := c.DeviceSynchronize(); err != nil {
		return nil, err
	}
	return download(t, c, p, softmaxT*softmaxT), nil
}

// sumSquares runs sumsq_partial of src over 1000 values in 4 blocks of 256
// and, when final, sum_f64 over the partials; it returns Σx².
func sumSquares(t *testing.T, c *cbits.CUDALibs, src string, final bool) (float64, error) {
	const n, chunk, blocks = 1000, 256, 4
	part, x := upload(t, c, make([]float32, 2*(blocks+1))), upload(t, c, seq(n, 8))
	ks := kernels(t, c, src, "sumsq_partial", "sum_f64")
	k, kf := ks[0], ks[1]
	if err := c.Launch(k, [3]uint32{blocks, 1, 1}, [3]uint32{256, 1, 1}, 0, 0, part, x, int64(n), int64(chunk), int32(0)); err != nil {
		return 0, err
	}
	if err := c.DeviceSynchronize(); err != nil || !final {
		return 0, err
	}
	out := upload(t, c, make([]float32, 2))
	if err := c.Launch(kf, [3]uint32{1, 1, 1}, [3]uint32{256, 1, 1}, 0, 0, out, part, int32(blocks)); err != nil {
		return 0, err
	}
	var s float64
	must(t, c.MemcpyDtoHAsync(unsafe.Pointer(&s), out, 8, 0))
	return s, c.DeviceSynchronize()
}

// kernels compiles src once and returns the named kernels.
func kernels(t *testing.T, c *cbits.CUDALibs, src string, names ...string) []cbits.Kernel {
	t.Helper()
	bin, _, err := c.Compile(src, "kernels.cu", "sm_90")
	must(t, err)
	lib, err := c.LibraryLoadData(bin)
	must(t, err)
	t.Cleanup(func() { c.LibraryUnload(lib) })
	ks := make([]cbits.Kernel, len(names))
	for i, n := range names {
		ks[i], err = c.LibraryGetKernel(lib, n)
		must(t, err)
	}
	return ks
}
