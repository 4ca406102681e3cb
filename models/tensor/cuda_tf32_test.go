package tensor

import (
	"fmt"
	"math/rand/v2"
	"os"
	"testing"
)

// tf32Tol bounds a TF32 product's error relative to the output's scale: TF32
// keeps 10 mantissa bits of each operand (unit roundoff 2^-11 ≈ 4.9e-4), and
// the products of a k-term sum carry about √k of those errors in random
// directions; 2e-3 is PyTorch's own bound for allow_tf32 products.
const tf32Tol = 2e-3

// TestCUDATF32MatMul runs the products with TF32 tensor cores allowed and
// checks them against the CPU's float32 products. Only a real GPU has TF32:
// the emulator computes every product in full float32.
func TestCUDATF32MatMul(t *testing.T) {
	if os.Getenv(DeviceTestEnv) != "cuda" {
		t.Skipf("TF32 exists only on a GPU's tensor cores: set %s=cuda on a GPU machine (bench/gpu/check.sh does)", DeviceTestEnv)
	}
	c, err := NewCUDA(0, CUDAOptions{TF32: true, KernelCache: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	cpu := gonumCPU()
	r := rand.New(rand.NewPCG(41, 42))
	for _, sh := range [][3]int{{64, 64, 64}, {130, 100, 257}, {1024, 768, 768}} {
		for _, tb := range []bool{false, true} {
			m, n, k := sh[0], sh[1], sh[2]
			a, b := randTensor(r, m, k), randTensor(r, k, n)
			if tb {
				b = randTensor(r, n, k)
			}
			want := New(m, n)
			cpu.MatMul(want, a, false, b, tb, 1, 0)
			dc := c.Alloc(m, n)
			c.MatMul(dc, up(c, a), false, up(c, b), tb, 1, 0)
			check(t, fmt.Sprintf("tf32 matmul %v tb=%v", sh, tb), down(c, dc), want.Data, tf32Tol)
		}
	}
}
