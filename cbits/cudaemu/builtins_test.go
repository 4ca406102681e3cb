package cudaemu_test

import (
	"math"
	"os"
	"testing"
)

// TestBuiltinsKernel runs ../testdata/builtins.cu, the file real NVRTC
// compiles in cbits' tests, and checks each row's results against Go.
func TestBuiltinsKernel(t *testing.T) {
	src, err := os.ReadFile("../testdata/builtins.cu")
	must(t, err)
	c := load(t)
	k := kernel(t, c, string(src), "row_stats")
	const rows, cols, stride, threads = 6, 300, 301, 128
	in := seq(rows*stride, 11)
	din, dout := upload(t, c, in), upload(t, c, make([]float32, 3*rows))
	must(t, c.Launch(k, [3]uint32{3, 2, 1}, [3]uint32{threads, 1, 1}, 4*threads/32, 0, dout, din, int32(cols), uint32(1), int64(stride)))
	got := download(t, c, dout, 3*rows)
	for r := 0; r < rows; r++ {
		x := in[r*stride : r*stride+cols]
		var ss float64
		m := math.Inf(-1)
		for _, v := range x {
			ss += float64(v) * float64(v)
			m = math.Max(m, float64(v))
		}
		v := float64(x[0])
		f := math.Exp(v) + math.Log(1+math.Abs(v)) + math.Tanh(v) + math.Sqrt(math.Abs(v)) + 1/math.Sqrt(1+v*v) +
			math.Erf(v) + math.Pow(math.Abs(v), 1.5) + math.Floor(v) + math.Min(v, 0)
		f = -f + 3
		want := []float32{float32(ss), float32(m), float32(f)}
		for j := range want {
			if !near(got[3*r+j], want[j], 1e-5) {
				t.Errorf("row %d result %d: %v, want %v", r, j, got[3*r+j], want[j])
			}
		}
	}
}

func TestBuiltinsExtras(t *testing.T) {
	src, err := os.ReadFile("../testdata/builtins.cu")
	must(t, err)
	c := load(t)
	k := kernel(t, c, string(src), "extras")
	const n = 64
	x := seq(n, 13)
	dx, dout := upload(t, c, x), upload(t, c, make([]float32, n))
	must(t, c.Launch(k, [3]uint32{2, 1, 1}, [3]uint32{32, 1, 1}, 0, 0, dout, dx))
	got := download(t, c, dout, n)
	for i := 0; i < n; i++ {
		first, prev := x[i/32*32], x[i]
		if i%32 > 0 {
			prev = x[i-1]
		}
		q := x[i/4*4:]
		want := first + prev + ((q[0] + q[1]) + (q[2] + q[3]))
		want = want + x[i] - x[i] // the kernel's bit-cast round trips, in its order
		if got[i] != want {
			t.Errorf("out[%d] = %v, want %v", i, got[i], want)
		}
	}
}
