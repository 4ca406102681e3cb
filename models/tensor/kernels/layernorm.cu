// LayerNorm over rows of width D: one block per row for the forward pass and
// the input gradient; the weight gradient is a column reduction in two fixed
// passes (partial sums over chunks of rows, then the chunks in order). The
// statistics (mean, rstd) are float32 whatever the rows' dtype; dt gives each
// void pointer's dtype in parameter order (00_common.cu).

extern "C" __global__ void layernorm_forward(void* y, float* mean, float* rstd, const void* x, const void* g, const void* b, int D, float eps, int dt) {
	__shared__ float sh[32];
	long long r = blockIdx.x, o = r * D;
	int by = IS_BF16(dt, 0), bx = IS_BF16(dt, 1), bg = IS_BF16(dt, 2), bb = IS_BF16(dt, 3);
	float s = 0.0f;
	for (int j = threadIdx.x; j < D; j += blockDim.x) s += ld_any(x, o + j, bx);
	float m = block_sum(s, sh) / (float)D;
	float v = 0.0f;
	for (int j = threadIdx.x; j < D; j += blockDim.x) {
		float d = ld_any(x, o + j, bx) - m;
		v += d * d;
	}
	float var = block_sum(v, sh) / (float)D;
	float rs = 1.0f / sqrtf(var + eps);
	if (threadIdx.x == 0) {
		mean[r] = m;
		rstd[r] = rs;
	}
	for (int j = threadIdx.x; j < D; j += blockDim.x) st_any(y, o + j, by, (ld_any(x, o + j, bx) - m) * rs * ld_any(g, j, bg) + ld_any(b, j, bb));
}

// layernorm_backward_input: dx = rstd·(g·dy - mean(g·dy) - x̂·mean(g·dy·x̂)).
extern "C" __global__ void layernorm_backward_input(void* dx, const void* dy, const void* x, const float* mean, const float* rstd, const void* g, int D, int dt) {
	__shared__ float sh[32];
	long long r = blockIdx.x, o = r * D;
	int bdx = IS_BF16(dt, 0), bdy = IS_BF16(dt, 1), bx = IS_BF16(dt, 2), bg = IS_BF16(dt, 3);
	float m = mean[r], rs = rstd[r];
	float a = 0.0f, b = 0.0f;
	for (int j = threadIdx.x; j < D; j += blockDim.x) {
		float gd = ld_any(dy, o + j, bdy) * ld_any(g, j, bg);
		a += gd;
		b += gd * (ld_any(x, o + j, bx) - m);
	}
	a = block_sum(a, sh) / (float)D;
	b = block_sum(b, sh) * rs / (float)D;
	for (int j = threadIdx.x; j < D; j += blockDim.x) {
		float xh = (ld_any(x, o + j, bx) - m) * rs;
		st_any(dx, o + j, bdx, rs * (ld_any(dy, o + j, bdy) * ld_any(g, j, bg) - a - xh * b));
	}
}

// layernorm_weight_partial: grid (row chunks, column blocks). For chunk c,
// pg[c·D+j] = Σ dy·x̂ and pb[c·D+j] = Σ dy over the chunk's rows in order.
extern "C" __global__ void layernorm_weight_partial(float* pg, float* pb, const void* dy, const void* x, const float* mean, const float* rstd, int N, int D, int chunk, int dt) {
	int c = blockIdx.x;
	int j = blockIdx.y * blockDim.x + threadIdx.x;
	if (j >= D) return;
	int bdy = IS_BF16(dt, 0), bx = IS_BF16(dt, 1);
	int r0 = c * chunk, r1 = min(N, r0 + chunk);
	float sg = 0.0f, sb = 0.0f;
	for (int r = r0; r < r1; r++) {
		long long i = (long long)r * D + j;
		float d = ld_any(dy, i, bdy);
		sg += d * ((ld_any(x, i, bx) - mean[r]) * rstd[r]);
		sb += d;
	}
	pg[(long long)c * D + j] = sg;
	pb[(long long)c * D + j] = sb;
}
