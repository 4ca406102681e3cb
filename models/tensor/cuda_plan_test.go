package tensor

import (
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
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
	for _, k := range []string{"add", "scale", "convert", "bias_residual", "linear_epilogue", "embed_forward", "embed_backward_wte",
		"embed_backward_wpe", "layernorm_forward", "layernorm_backward_input", "layernorm_weight_partial",
		"colsum_partial", "colsum_final", "sumsq_partial", "sum_f64", "gelu_forward", "gelu_backward", "gelu_exact_forward", "gelu_exact_backward",
		"causal_softmax_forward", "causal_softmax_backward", "crossentropy_forward", "crossentropy_backward",
		"adamw_step", "adamw_multi", "sumsq_multi_partial", "sumsq_multi_final", "sgd_step"} {
		if !slices.Contains(names, k) {
			t.Errorf("kernel %s not in the kernel source (have %v)", k, names)
		}
	}
}

// TestCheckBlock: the block sizes the backend uses pass; a partial warp, too
// many threads, a second dimension, or sumsq's tree on anything but 256 are
// refused by name.
func TestCheckBlock(t *testing.T) {
	for _, b := range []int{elemBlock, rowBlock, colBlock} {
		if err := checkBlock("add", blk(b)); err != nil {
			t.Errorf("block %d: %v", b, err)
		}
	}
	if err := checkBlock("sum_f64", blk(elemBlock)); err != nil {
		t.Errorf("sumsq on elemBlock: %v", err)
	}
	for _, c := range []struct {
		kernel string
		block  [3]uint32
		want   string
	}{
		{"add", blk(100), "block of 100 threads: want a multiple of 32"},
		{"add", blk(0), "multiple of 32"},
		{"add", blk(2048), "up to 1024"},
		{"layernorm_forward", [3]uint32{32, 2, 1}, "one-dimensional"},
		{"sumsq_partial", blk(128), "kernel sumsq_partial: block of 128 threads: it needs exactly 256"},
		{"sum_f64", blk(512), "needs exactly 256"},
	} {
		if err := checkBlock(c.kernel, c.block); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s %v: %v, want %q", c.kernel, c.block, err, c.want)
		}
	}
}

// TestExactBlocksMatchSource: every kernel that adds a per-thread shared
// array with block_sum_d is in exactBlock with that array's size, so the
// host check follows the source.
func TestExactBlocksMatchSource(t *testing.T) {
	src := KernelSource()
	decls := kernelDecl.FindAllStringSubmatchIndex(src, -1)
	shared := regexp.MustCompile(`__shared__ double (\w+)\[(\d+)\]`)
	found := map[string]uint32{}
	for i, d := range decls {
		end := len(src)
		if i+1 < len(decls) {
			end = decls[i+1][0]
		}
		name, body := src[d[2]:d[3]], src[d[1]:end]
		if !strings.Contains(body, "block_sum_d(") {
			continue
		}
		m := shared.FindStringSubmatch(body)
		if m == nil {
			t.Errorf("%s calls block_sum_d without a __shared__ double array", name)
			continue
		}
		n, _ := strconv.Atoi(m[2])
		found[name] = uint32(n)
	}
	if !maps.Equal(found, exactBlock) {
		t.Errorf("kernels with a per-thread shared tree %v, exactBlock %v", found, exactBlock)
	}
}
