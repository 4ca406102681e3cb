// Optimizer updates, one thread per element, with the CPU backend's
// arithmetic: AdamW in float32 (torch.optim.AdamW), SGD with momentum in
// double. Compiled without fused multiply-add, the bits equal the CPU's.

extern "C" __global__ void adamw_step(float* w, const float* g, float* m, float* v, long long n,
	float b1, float b2, float gscale, float decay, float step, float ibc2, float eps) {
	float c1 = 1.0f - b1, c2 = 1.0f - b2;
	for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
		float gi = g[i] * gscale;
		float mi = b1 * m[i] + c1 * gi;
		float vi = b2 * v[i] + c2 * gi * gi;
		m[i] = mi;
		v[i] = vi;
		w[i] = w[i] * decay - step * mi / (sqrtf(vi) * ibc2 + eps);
	}
}

// sgd_step takes its float64 scalars as long longs holding the doubles' bits
// (kernel parameters are float, int or long long).
__device__ __forceinline__ double bits_double(long long b) {
	union {
		long long i;
		double d;
	} u;
	u.i = b;
	return u.d;
}

extern "C" __global__ void sgd_step(float* w, const float* g, float* buf, long long n,
	long long gscaleBits, long long wdBits, long long momBits, long long lrBits, int fresh) {
	double gscale = bits_double(gscaleBits), wd = bits_double(wdBits), mom = bits_double(momBits), lr = bits_double(lrBits);
	for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
		double gi = (double)g[i] * gscale + wd * (double)w[i];
		if (!fresh) gi += mom * (double)buf[i];
		buf[i] = (float)gi;
		w[i] = (float)((double)w[i] - lr * gi);
	}
}
