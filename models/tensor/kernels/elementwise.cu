// Elementwise kernels: a chunk of CHUNK elements a thread (GRID_CHUNKS),
// grid-stride loops; dt gives each void pointer's dtype (00_common.cu), in
// parameter order.

extern "C" __global__ void add(void* y, const void* a, const void* b, long long n, int dt) {
	int by = IS_BF16(dt, 0), ba = IS_BF16(dt, 1), bb = IS_BF16(dt, 2);
	bool vy = vec_ok(y, 0, by), va = vec_ok(a, 0, ba), vb = vec_ok(b, 0, bb);
	float u[CHUNK], v[CHUNK];
	GRID_CHUNKS(j0, w, n) {
		ldc(u, a, j0, (int)w, ba, va);
		ldc(v, b, j0, (int)w, bb, vb);
		for (int e = 0; e < CHUNK; e++) u[e] = u[e] + v[e];
		stc(y, j0, (int)w, by, vy, u);
	}
}

extern "C" __global__ void scale(void* x, float s, long long n, int dt) {
	int bx = IS_BF16(dt, 0);
	bool vx = vec_ok(x, 0, bx);
	float u[CHUNK];
	GRID_CHUNKS(j0, w, n) {
		ldc(u, x, j0, (int)w, bx, vx);
		for (int e = 0; e < CHUNK; e++) u[e] = u[e] * s;
		stc(x, j0, (int)w, bx, vx, u);
	}
}

// convert copies src into dst, converting between dtypes (rounding to nearest
// even into bfloat16; widening is exact).
extern "C" __global__ void convert(void* dst, const void* src, long long n, int dt) {
	int bd = IS_BF16(dt, 0), bs = IS_BF16(dt, 1);
	bool vd = vec_ok(dst, 0, bd), vs = vec_ok(src, 0, bs);
	float u[CHUNK];
	GRID_CHUNKS(j0, w, n) {
		ldc(u, src, j0, (int)w, bs, vs);
		stc(dst, j0, (int)w, bd, vd, u);
	}
}

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
