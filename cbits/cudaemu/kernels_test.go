package cudaemu_test

import (
	"testing"

	"github.com/pplaunch/pplaunch/cbits"
)

const smokeSrc = `
extern "C" __global__ void axpy(float *y, const float *x, float a, int n) {
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n) y[i] += a * x[i];
}
`

func TestSmoke(t *testing.T) {
	c := load(t)
	k := kernel(t, c, smokeSrc, "axpy")
	x, y := seq(1000, 1), seq(1000, 2)
	dx, dy := upload(t, c, x), upload(t, c, y)
	must(t, c.Launch(k, [3]uint32{8, 1, 1}, [3]uint32{128, 1, 1}, 0, 0, dy, dx, float32(2), int32(1000)))
	got := download(t, c, dy, 1000)
	for i := range got {
		if want := y[i] + 2*x[i]; got[i] != want {
			t.Fatalf("y[%d] = %v, want %v", i, got[i], want)
		}
	}
	_ = cbits.DevPtr(0)
}
