package tensor

import (
	"slices"
	"testing"
)

// TestSizeClass: classes cover the request, waste at most an eighth above
// 4 KiB, and are few (requests of nearby sizes share one).
func TestSizeClass(t *testing.T) {
	for _, c := range []struct{ in, want int }{
		{1, 512}, {512, 512}, {513, 1024}, {4096, 4096}, {4097, 4608}, {1 << 20, 1 << 20}, {1<<20 + 1, 1<<20 + 1<<17},
	} {
		if got := sizeClass(c.in); got != c.want {
			t.Errorf("sizeClass(%d) = %d, want %d", c.in, got, c.want)
		}
	}
	for n := 1; n < 1<<22; n = n*5/4 + 1 {
		c := sizeClass(n)
		if c < n || (n > 4096 && float64(c-n) > float64(n)/8) {
			t.Fatalf("sizeClass(%d) = %d", n, c)
		}
	}
}

// TestTokenRows: each distinct token once, ascending, with its rows in order.
func TestTokenRows(t *testing.T) {
	packed, u := tokenRows([]int32{5, 2, 5, 0, 2, 5})
	// uniq 0 2 5 | start 0 1 3 6 | rows 3 1 4 0 2 5
	want := []int32{0, 2, 5, 0, 1, 3, 6, 3, 1, 4, 0, 2, 5}
	if u != 3 || !slices.Equal(packed, want) {
		t.Fatalf("tokenRows = %v (%d distinct), want %v (3)", packed, u, want)
	}
}

// TestSumsqBlocks: the chunks cover n, are whole blocks of threads, and there
// are at most 1024 of them.
func TestSumsqBlocks(t *testing.T) {
	for _, n := range []int{1, 255, 2048, 2049, 1 << 20, 124439808} {
		b, c := sumsqBlocks(n)
		if b < 1 || b > 1024 || b*c < n || (b-1)*c >= n || c%elemBlock != 0 {
			t.Errorf("sumsqBlocks(%d) = %d blocks of %d", n, b, c)
		}
	}
}

// TestKernelNames: the source defines each kernel the backend launches.
func TestKernelNames(t *testing.T) {
	names := KernelNames()
	for _, k := range []string{"add_f32", "scale_f32", "bias_residual", "embed_forward", "embed_backward_wte",
		"embed_backward_wpe", "layernorm_forward", "layernorm_backward_input", "layernorm_weight_partial",
		"colsum_partial", "colsum_final", "sumsq_partial", "sumsq_final", "gelu_forward", "gelu_backward", "gelu_exact_forward", "gelu_exact_backward",
		"causal_softmax_forward", "causal_softmax_backward", "crossentropy_forward", "crossentropy_backward",
		"adamw_step", "sgd_step"} {
		if !slices.Contains(names, k) {
			t.Errorf("kernel %s not in the kernel source (have %v)", k, names)
		}
	}
}
