// Softmax cross-entropy over rows of V logits, one block per row. The forward
// writes probabilities (in place when probs == logits) and each row's loss
// log Σe^(z-max) - (z_target - max); the host adds the rows in order. The
// backward is dlogits = scale·(p - onehot(target))/N, as the CPU computes it.
// Only the first valid columns are the vocabulary: the padding columns after
// them are masked to -inf (probability 0, so no gradient).

extern "C" __global__ void crossentropy_forward(float* probs, float* loss, const float* logits, const int* targets, int V, int valid) {
	__shared__ float sh[32];
	long long r = blockIdx.x;
	const float* lr = logits + r * V;
	float* pr = probs + r * V;
	float mx = -INFINITY;
	for (int j = threadIdx.x; j < valid; j += blockDim.x) mx = fmaxf(mx, lr[j]);
	mx = block_max(mx, sh); // its barriers also order the read below before any write
	float zt = lr[targets[r]] - mx;
	float s = 0.0f;
	for (int j = threadIdx.x; j < valid; j += blockDim.x) s += expf(lr[j] - mx);
	s = block_sum(s, sh); // every thread has read its logits before the writes
	float inv = 1.0f / s;
	for (int j = threadIdx.x; j < V; j += blockDim.x) pr[j] = j < valid ? expf(lr[j] - mx) * inv : 0.0f;
	if (threadIdx.x == 0) loss[r] = logf(s) - zt;
}

extern "C" __global__ void crossentropy_backward(float* dlogits, const float* probs, const int* targets, int V, float s) {
	long long r = blockIdx.x;
	int tg = targets[r];
	for (int j = blockIdx.y * blockDim.x + threadIdx.x; j < V; j += gridDim.y * blockDim.x) {
		float v = probs[r * V + j] * s;
		if (j == tg) v = v - s;
		dlogits[r * V + j] = v;
	}
}
