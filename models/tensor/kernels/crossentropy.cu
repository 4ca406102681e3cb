// Softmax cross-entropy over rows of V logits, a warp per row (00_common.cu's
// row kernels). The forward reads each row once for its maximum and the sum
// of e^(z-max) together (online: a lane keeps its running maximum m and
// s = Σ e^(z-m) in double, rescaling s by e^(m-m') in double when the
// maximum grows to m'; the lanes combine their (m, s) pairs by a butterfly),
// then once more to write probabilities (in place when probs == logits), and
// writes each row's loss log s - (z_target - max) as a double (loss holds n
// doubles, which sum_f64 adds). The sum
// is a double, as the CPU's: in float32, a vocabulary of 50257 terms loses
// about 1e-6 of the loss. The backward is dlogits = scale·(p - onehot(target))/N,
// as the CPU computes it, eight elements a thread. Only the first valid
// columns are the vocabulary: the padding columns after them are masked to
// -inf (probability 0, so no gradient).
// dt: bit 0 probs, bit 1 logits (forward); bit 0 dlogits, bit 1 probs (backward).

// online_add adds e^(z-m) to the lane's (m, s), moving m to z if z is larger.
__device__ __forceinline__ void online_add(float z, float* m, double* s) {
	if (z > *m) {
		*s = *s * exp((double)*m - (double)z) + 1.0; // e^-inf = 0 while the lane has seen nothing
		*m = z;
	} else if (z != -INFINITY) {
		*s += (double)expf(z - *m);
	}
}

// online_scaled is s·e^(m-mx), 0 for a lane that has seen nothing.
__device__ __forceinline__ double online_scaled(float m, double s, float mx) {
	return m == -INFINITY ? 0.0 : s * exp((double)m - (double)mx);
}

// warp_online combines the lanes' (m, s) by a butterfly: each step adds the
// two rescaled sums, which commutes, so both lanes of a pair get the same bits.
__device__ __forceinline__ void warp_online(float* m, double* s) {
	for (int o = 16; o > 0; o >>= 1) {
		float m2 = __shfl_xor_sync(0xffffffffu, *m, o);
		double s2 = __shfl_xor_sync(0xffffffffu, *s, o);
		float mx = fmaxf(*m, m2);
		*s = online_scaled(*m, *s, mx) + online_scaled(m2, s2, mx);
		*m = mx;
	}
}

extern "C" __global__ void crossentropy_forward(void* probs, float* loss, const void* logits, const int* targets, int N, int V, int valid, int dt) {
	long long r = row_of();
	if (r >= N) return; // the whole warp: its lanes share r
	long long o = r * V;
	int bp = IS_BF16(dt, 0), bl = IS_BF16(dt, 1), lane = threadIdx.x & 31;
	bool vp = vec_ok(probs, o, bp), vl = vec_ok(logits, o, bl);
	int tg = targets[r], owner = (tg / CHUNK) % 32;
	// The target's logit is read by the lane that owns it, before that lane
	// overwrites it with a probability.
	float zt = lane == owner ? ld_any(logits, o + tg, bl) : 0.0f;
	zt = __shfl_sync(0xffffffffu, zt, owner);
	float m = -INFINITY, v[CHUNK];
	double s = 0.0;
	ROW_CHUNKS(j0, w, valid) {
		ldc(v, logits, o + j0, w, bl, vl);
		for (int e = 0; e < CHUNK; e++)
			if (e < w) online_add(v[e], &m, &s);
	}
	warp_online(&m, &s);
	float inv = (float)(1.0 / s);
	ROW_CHUNKS(j0, w, V) {
		ldc(v, logits, o + j0, w, bl, vl);
		for (int e = 0; e < CHUNK; e++) v[e] = j0 + e < valid ? expf(v[e] - m) * inv : 0.0f;
		stc(probs, o + j0, w, bp, vp, v);
	}
	if (lane == 0) ((double*)loss)[r] = log(s) - (double)(zt - m);
}

// crossentropy_backward: grid (rows, column blocks); each thread takes chunks
// of CHUNK elements of its row.
extern "C" __global__ void crossentropy_backward(void* dlogits, const void* probs, const int* targets, int V, float s, int dt) {
	long long r = blockIdx.x, o = r * V;
	int tg = targets[r], bd = IS_BF16(dt, 0), bp = IS_BF16(dt, 1);
	bool vd = vec_ok(dlogits, o, bd), vp = vec_ok(probs, o, bp);
	float v[CHUNK];
	for (int j0 = (blockIdx.y * blockDim.x + threadIdx.x) * CHUNK; j0 < V; j0 += gridDim.y * blockDim.x * CHUNK) {
		int w = min(CHUNK, V - j0);
		ldc(v, probs, o + j0, w, bp, vp);
		for (int e = 0; e < CHUNK; e++) {
			v[e] = v[e] * s;
			if (j0 + e == tg) v[e] = v[e] - s;
		}
		stc(dlogits, o + j0, w, bd, vd, v);
	}
}

