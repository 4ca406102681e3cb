// Softmax cross-entropy over rows of V logits, one block of 256 per row. The
// forward writes probabilities (in place when probs == logits) and each row's
// loss log Σe^(z-max) - (z_target - max) as a double (loss holds n doubles);
// the host adds the rows in order. The denominator is summed in double, as
// the CPU sums it: in float32, a vocabulary of 50257 terms loses about 1e-6
// of the loss. The
// backward is dlogits = scale·(p - onehot(target))/N, as the CPU computes it.
// Only the first valid columns are the vocabulary: the padding columns after
// them are masked to -inf (probability 0, so no gradient).
// dt: bit 0 probs, bit 1 logits (forward); bit 0 dlogits, bit 1 probs (backward).

extern "C" __global__ void crossentropy_forward(void* probs, float* loss, const void* logits, const int* targets, int V, int valid, int dt) {
	__shared__ float sh[32];
	__shared__ double shd[256];
	long long r = blockIdx.x, o = r * V;
	int bp = IS_BF16(dt, 0), bl = IS_BF16(dt, 1);
	float mx = -INFINITY;
	for (int j = threadIdx.x; j < valid; j += blockDim.x) mx = fmaxf(mx, ld_any(logits, o + j, bl));
	mx = block_max(mx, sh); // its barriers also order the read below before any write
	float zt = ld_any(logits, o + targets[r], bl) - mx;
	double s = 0.0;
	for (int j = threadIdx.x; j < valid; j += blockDim.x) s += (double)expf(ld_any(logits, o + j, bl) - mx);
	s = block_sum_d(s, shd); // its barriers: every thread has read its logits before the writes, and sees the total
	float inv = (float)(1.0 / s);
	for (int j = threadIdx.x; j < V; j += blockDim.x) st_any(probs, o + j, bp, j < valid ? expf(ld_any(logits, o + j, bl) - mx) * inv : 0.0f);
	if (threadIdx.x == 0) ((double*)loss)[r] = log(s) - (double)zt;
}

extern "C" __global__ void crossentropy_backward(void* dlogits, const void* probs, const int* targets, int V, float s, int dt) {
	long long r = blockIdx.x;
	int tg = targets[r], bd = IS_BF16(dt, 0), bp = IS_BF16(dt, 1);
	for (int j = blockIdx.y * blockDim.x + threadIdx.x; j < V; j += gridDim.y * blockDim.x) {
		float v = ld_any(probs, r * V + j, bp) * s;
		if (j == tg) v = v - s;
		st_any(dlogits, r * V + j, bd, v);
	}
}
