package tensor

import (
	"context"
	"slices"
	"testing"
)

// TestCUDAStaging: a tensor staged out reaches the host after the compute
// queued before it (a Scale), a staged-in one is what the compute queued
// after Await reads, views stage their own elements, and the pinned buffers
// are reused from the pool.
func TestCUDAStaging(t *testing.T) {
	c := emuCUDA(t)
	ctx := context.Background()
	x := c.Alloc(2, 3)
	c.Upload(x, []float32{1, 2, 3, 4, 5, 6})
	c.Scale(x, 2)
	s := c.StageOut(x)
	if err := s.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	if want := []float32{2, 4, 6, 8, 10, 12}; !slices.Equal(s.Host, want) {
		t.Fatalf("staged out %v, want %v", s.Host, want)
	}
	first := &s.Host[0]
	s.Release()

	in := c.Pinned(3)
	if &in.Host[0] != first {
		t.Errorf("a released pinned buffer of the same size class was not reused")
	}
	copy(in.Host, []float32{-1, -2, -3})
	c.StageIn(x.View(3, 3), in)
	in.Await()
	in.Release()
	c.Scale(x, 3) // must see the upload
	if got, want := down(c, x), []float32{6, 12, 18, -3, -6, -9}; !slices.Equal(got, want) {
		t.Fatalf("after staging into the second row and scaling: %v, want %v", got, want)
	}
	v := c.StageOut(x.View(1, 2))
	if err := v.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	if want := []float32{12, 18}; !slices.Equal(v.Host, want) {
		t.Fatalf("view staged out %v, want %v", v.Host, want)
	}
	v.Release()
	c.Free(x)
	defer func() {
		if recover() == nil {
			t.Error("a second Release did not panic")
		}
	}()
	v.Release()
}
