// LayerNorm over rows of width D: one block per row for the forward pass and
// the input gradient; the weight gradient is a column reduction in two fixed
// passes (partial sums over chunks of rows, then the chunks in order).

extern "C" __global__ void layernorm_forward(float* y, float* mean, float* rstd, const float* x, const float* g, const float* b, int D, float eps) {
	__shared__ float sh[32];
	long long r = blockIdx.x;
	const float* xr = x + r * D;
	float s = 0.0f;
	for (int j = threadIdx.x; j < D; j += blockDim.x) s += xr[j];
	float m = block_sum(s, sh) / (float)D;
	float v = 0.0f;
	for (int j = threadIdx.x; j < D; j += blockDim.x) {
		float d = xr[j] - m;
		v += d * d;
	}
	float var = block_sum(v, sh) / (float)D;
	float rs = 1.0f / sqrtf(var + eps);
	if (threadIdx.x == 0) {
		mean[r] = m;
		rstd[r] = rs;
	}
	float* yr = y + r * D;
	for (int j = threadIdx.x; j < D; j += blockDim.x) yr[j] = (xr[j] - m) * rs * g[j] + b[j];
}

// layernorm_backward_input: dx = rstd·(g·dy - mean(g·dy) - x̂·mean(g·dy·x̂)).
extern "C" __global__ void layernorm_backward_input(float* dx, const float* dy, const float* x, const float* mean, const float* rstd, const float* g, int D) {
	__shared__ float sh[32];
	long long r = blockIdx.x;
	const float* xr = x + r * D;
	const float* dyr = dy + r * D;
	float m = mean[r], rs = rstd[r];
	float a = 0.0f, b = 0.0f;
	for (int j = threadIdx.x; j < D; j += blockDim.x) {
		float gd = dyr[j] * g[j];
		a += gd;
		b += gd * (xr[j] - m);
	}
	a = block_sum(a, sh) / (float)D;
	b = block_sum(b, sh) * rs / (float)D;
	float* dxr = dx + r * D;
	for (int j = threadIdx.x; j < D; j += blockDim.x) {
		float xh = (xr[j] - m) * rs;
		dxr[j] = rs * (dyr[j] * g[j] - a - xh * b);
	}
}

// layernorm_weight_partial: grid (row chunks, column blocks). For chunk c,
// pg[c·D+j] = Σ dy·x̂ and pb[c·D+j] = Σ dy over the chunk's rows in order.
extern "C" __global__ void layernorm_weight_partial(float* pg, float* pb, const float* dy, const float* x, const float* mean, const float* rstd, int N, int D, int chunk) {
	int c = blockIdx.x;
	int j = blockIdx.y * blockDim.x + threadIdx.x;
	if (j >= D) return;
	int r0 = c * chunk, r1 = min(N, r0 + chunk);
	float sg = 0.0f, sb = 0.0f;
	for (int r = r0; r < r1; r++) {
		long long i = (long long)r * D + j;
		float d = dy[i];
		sg += d * ((x[i] - mean[r]) * rstd[r]);
		sb += d;
	}
	pg[(long long)c * D + j] = sg;
	pb[(long long)c * D + j] = sb;
}
