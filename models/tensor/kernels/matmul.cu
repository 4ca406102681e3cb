// The linear layer's bias and residual around the cuBLAS product (matrix
// products themselves run on cuBLAS): one thread per element, grid-stride
// loops; dt gives each void pointer's dtype (00_common.cu), in parameter order.

// bias_residual sets the float32 y[r,j] = residual[r,j] + bias[j]; either may
// be null (not both). The GEMM then adds x·wᵀ onto y.
extern "C" __global__ void bias_residual(float* y, const void* bias, const void* residual, int rows, int cols, int dt) {
	long long n = (long long)rows * cols;
	int bb = IS_BF16(dt, 0), br = IS_BF16(dt, 1);
	GRID_STRIDE(i, n) {
		int j = (int)(i % cols);
		if (residual == 0) y[i] = ld_any(bias, j, bb);
		else if (bias == 0) y[i] = ld_any(residual, i, br);
		else y[i] = ld_any(residual, i, br) + ld_any(bias, j, bb);
	}
}

// linear_epilogue finishes a product accumulated in float32 (acc) into y of
// its own dtype: y = acc + (residual + bias), each optional, in the order of
// bias_residual followed by a GEMM with beta 1, and rounded once.
extern "C" __global__ void linear_epilogue(void* y, const float* acc, const void* bias, const void* residual, int rows, int cols, int dt) {
	long long n = (long long)rows * cols;
	int by = IS_BF16(dt, 0), bb = IS_BF16(dt, 1), br = IS_BF16(dt, 2);
	GRID_STRIDE(i, n) {
		int j = (int)(i % cols);
		float v = acc[i];
		if (residual == 0 && bias != 0) v = v + ld_any(bias, j, bb);
		else if (bias == 0 && residual != 0) v = v + ld_any(residual, i, br);
		else if (bias != 0) v = v + (ld_any(residual, i, br) + ld_any(bias, j, bb));
		st_any(y, i, by, v);
	}
}
