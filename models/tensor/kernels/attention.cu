// Causal softmax for attention, one block per score row (batch, head, query i):
// the scores (already scaled by the GEMM) of keys j ≤ i become probabilities,
// keys past i become 0. The backward turns dP into dS = P ⊙ (dP - Σ P·dP)·scale.

extern "C" __global__ void causal_softmax_forward(float* p, int T) {
	__shared__ float sh[32];
	long long row = blockIdx.x;
	int i = (int)(row % T);
	float* pr = p + row * T;
	float mx = -INFINITY;
	for (int j = threadIdx.x; j <= i; j += blockDim.x) mx = fmaxf(mx, pr[j]);
	mx = block_max(mx, sh);
	float s = 0.0f;
	for (int j = threadIdx.x; j <= i; j += blockDim.x) {
		float e = expf(pr[j] - mx);
		pr[j] = e;
		s += e;
	}
	float inv = 1.0f / block_sum(s, sh);
	for (int j = threadIdx.x; j < T; j += blockDim.x) pr[j] = j <= i ? pr[j] * inv : 0.0f;
}

// causal_softmax_backward: dp holds dP on entry and dS on return.
extern "C" __global__ void causal_softmax_backward(float* dp, const float* p, int T, float scale) {
	__shared__ float sh[32];
	long long row = blockIdx.x;
	int i = (int)(row % T);
	const float* pr = p + row * T;
	float* dr = dp + row * T;
	float s = 0.0f;
	for (int j = threadIdx.x; j <= i; j += blockDim.x) s += pr[j] * dr[j];
	s = block_sum(s, sh);
	for (int j = threadIdx.x; j < T; j += blockDim.x) dr[j] = j <= i ? pr[j] * (dr[j] - s) * scale : 0.0f;
}
