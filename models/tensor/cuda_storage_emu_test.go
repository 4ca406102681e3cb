package tensor

import (
	"fmt"
	"strings"
	"testing"
)

// TestCUDARefusesForeignTensors: a host tensor given to the CUDA backend is a
// panic that says what to do, never a read of host memory as device memory.
func TestCUDARefusesForeignTensors(t *testing.T) {
	c := emuCUDA(t)
	defer func() {
		if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), "host tensor") {
			t.Fatalf("panic %v, want one naming a host tensor", r)
		}
	}()
	c.Add(c.Alloc(4), New(4), c.Alloc(4))
}
