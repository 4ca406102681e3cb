package tensor

import "fmt"

// uploadLen checks that src holds t's elements, one value each.
func uploadLen(t *Tensor, src []float32) {
	if len(src) != t.Len() {
		panic(fmt.Sprintf("upload: %d values into %v (%d elements)", len(src), t.Shape, t.Len()))
	}
}

// downloadLen checks that dst has room for t's elements, one value each.
func downloadLen(dst []float32, t *Tensor) {
	if len(dst) != t.Len() {
		panic(fmt.Sprintf("download: %v (%d elements) into %d values", t.Shape, t.Len(), len(dst)))
	}
}

// copyLen checks that src has as many elements as dst (their shapes may
// differ).
func copyLen(dst, src *Tensor) { mustLen("copy", "src", src, dst.Len()) }
