// LayerNorm over rows of width D: a warp per row for the forward pass and the
// input gradient (00_common.cu's row kernels: fixed chunks per lane, a
// butterfly); the weight gradient is a column reduction in two fixed passes
// (partial sums over chunks of rows, then the chunks in order). The
// statistics (mean, rstd) are float32 whatever the rows' dtype; dt gives each
// void pointer's dtype in parameter order. The mean and the variance are two
// passes over the row (the second from cache), as the CPU computes them.

extern "C" __global__ void layernorm_forward(void* y, float* mean, float* rstd, const void* x, const void* g, const void* b, int N, int D, float eps, int dt) {
	long long r = row_of();
	if (r >= N) return; // the whole warp: its lanes share r
	long long o = r * D;
	int by = IS_BF16(dt, 0), bx = IS_BF16(dt, 1), bg = IS_BF16(dt, 2), bb = IS_BF16(dt, 3);
	bool vy = vec_ok(y, o, by), vx = vec_ok(x, o, bx), vg = vec_ok(g, 0, bg), vb = vec_ok(b, 0, bb);
	float v[CHUNK], s = 0.0f;
	ROW_CHUNKS(j0, w, D) {
		ldc(v, x, o + j0, w, bx, vx);
		for (int e = 0; e < CHUNK; e++)
			if (e < w) s += v[e];
	}
	float m = warp_sum(s) / (float)D;
	float q = 0.0f;
	ROW_CHUNKS(j0, w, D) {
		ldc(v, x, o + j0, w, bx, vx);
		for (int e = 0; e < CHUNK; e++)
			if (e < w) {
				float d = v[e] - m;
				q += d * d;
			}
	}
	float rs = 1.0f / sqrtf(warp_sum(q) / (float)D + eps);
	if ((threadIdx.x & 31) == 0) {
		mean[r] = m;
		rstd[r] = rs;
	}
	float gv[CHUNK], bv[CHUNK];
	ROW_CHUNKS(j0, w, D) {
		ldc(v, x, o + j0, w, bx, vx);
		ldc(gv, g, j0, w, bg, vg);
		ldc(bv, b, j0, w, bb, vb);
		for (int e = 0; e < CHUNK; e++) v[e] = (v[e] - m) * rs * gv[e] + bv[e];
		stc(y, o + j0, w, by, vy, v);
	}
}

// layernorm_backward_input: dx = rstd·(g·dy - mean(g·dy) - x̂·mean(g·dy·x̂)).
extern "C" __global__ void layernorm_backward_input(void* dx, const void* dy, const void* x, const float* mean, const float* rstd, const void* g, int N, int D, int dt) {
	long long r = row_of();
	if (r >= N) return;
	long long o = r * D;
	int bdx = IS_BF16(dt, 0), bdy = IS_BF16(dt, 1), bx = IS_BF16(dt, 2), bg = IS_BF16(dt, 3);
	bool vdx = vec_ok(dx, o, bdx), vdy = vec_ok(dy, o, bdy), vx = vec_ok(x, o, bx), vg = vec_ok(g, 0, bg);
	float m = mean[r], rs = rstd[r];
	float dv[CHUNK], xv[CHUNK], gv[CHUNK], a = 0.0f, b = 0.0f;
	ROW_CHUNKS(j0, w, D) {
		ldc(dv, dy, o + j0, w, bdy, vdy);
		ldc(xv, x, o + j0, w, bx, vx);
		ldc(gv, g, j0, w, bg, vg);
		for (int e = 0; e < CHUNK; e++)
			if (e < w) {
				float gd = dv[e] * gv[e];
				a += gd;
				b += gd * (xv[e] - m);
			}
	}
	a = warp_sum(a) / (float)D;
	b = warp_sum(b) * rs / (float)D;
	ROW_CHUNKS(j0, w, D) {
		ldc(dv, dy, o + j0, w, bdy, vdy);
		ldc(xv, x, o + j0, w, bx, vx);
		ldc(gv, g, j0, w, bg, vg);
		for (int e = 0; e < CHUNK; e++) {
			float xh = (xv[e] - m) * rs;
			dv[e] = rs * (dv[e] * gv[e] - a - xh * b);
		}
		stc(dx, o + j0, w, bdx, vdx, dv);
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
