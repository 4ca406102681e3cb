package tensor

import (
	"context"
	"slices"
	"testing"
)

// TestHostStaging: a host transport asks a backend for its pinned staging
// through Memory.HostStaging: none on the CPU (its tensors are host memory),
// the CUDA backend's copy stream and pinned buffers on a GPU, which stage a
// tensor out through the interface.
func TestHostStaging(t *testing.T) {
	c, err := NewCPU("go")
	if err != nil {
		t.Fatal(err)
	}
	var cpu Memory = c
	if s := cpu.HostStaging(); s != nil {
		t.Errorf("the CPU backend's HostStaging is %T, want nil", s)
	}
	var gpu Memory = emuCUDA(t)
	s := gpu.HostStaging()
	if s == nil {
		t.Fatal("the CUDA backend's HostStaging is nil")
	}
	x := gpu.Alloc(3)
	gpu.Upload(x, []float32{1, 2, 3})
	out := s.StageOut(x)
	if err := out.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer out.Release()
	if want := []float32{1, 2, 3}; !slices.Equal(out.Host, want) {
		t.Errorf("staged out through HostStaging: %v, want %v", out.Host, want)
	}
}
