package tensor

import (
	"slices"
	"strings"
	"testing"
)

// TestViewsShareStorage: a view and a reshape read and write their parent's
// elements; a view past the end and a reshape to another size panic; a
// detached tensor has no elements left to read.
func TestViewsShareStorage(t *testing.T) {
	be := gonumCPU()
	x := be.Zeros(2, 3)
	be.Upload(x, []float32{1, 2, 3, 4, 5, 6})
	v := x.View(2, 2, 2)
	r := x.Reshape(3, 2)
	be.Scale(v, 10)
	got := make([]float32, 6)
	be.Download(got, r)
	if want := []float32{1, 2, 30, 40, 50, 60}; !slices.Equal(got, want) {
		t.Fatalf("after scaling the view: %v, want %v", got, want)
	}
	for _, c := range []struct {
		name, want string
		f          func()
	}{
		{"view past the end", "view [4,8)", func() { x.View(4, 4) }},
		{"reshape", "reshape [2 3] (6 elements) to [4]", func() { x.Reshape(4) }},
		{"upload size", "upload: 2 values into [2 3]", func() { be.Upload(x, []float32{1, 2}) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			defer func() {
				if r := recover(); r == nil || !strings.Contains(r.(string), c.want) {
					t.Fatalf("panic %v, want %q", r, c.want)
				}
			}()
			c.f()
		})
	}
	be.Free(x)
	if x.Len() != 0 || !x.OnHost() {
		t.Fatalf("freed tensor: %d elements", x.Len())
	}
}
