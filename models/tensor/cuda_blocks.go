package tensor

import "fmt"

// exactBlock are the kernels that need one block size: their shared array
// holds a double per thread and block_sum_d adds it as a tree.
var exactBlock = map[string]uint32{"sumsq_partial": 256, "sum_f64": 256, "sumsq_multi_partial": 256, "sumsq_multi_final": 256}

// checkBlock is the host-side check of the block shape every kernel
// assumes: one dimension, a whole number of warps (the warp reductions read
// blockDim.x / 32 partial sums and shuffle with a full mask), at most 1024
// threads, and the exact size where exactBlock names one. A wrong size would
// not fail on the GPU; it would give wrong sums.
func checkBlock(kernel string, block [3]uint32) error {
	x := block[0]
	switch {
	case block[1] != 1 || block[2] != 1:
		return fmt.Errorf("kernel %s: block %v: the kernels take one-dimensional blocks", kernel, block)
	case x == 0 || x%32 != 0 || x > 1024:
		return fmt.Errorf("kernel %s: block of %d threads: want a multiple of 32 (whole warps) up to 1024", kernel, x)
	}
	if want, ok := exactBlock[kernel]; ok && x != want {
		return fmt.Errorf("kernel %s: block of %d threads: it needs exactly %d (its shared array and tree have that size)", kernel, x, want)
	}
	return nil
}
