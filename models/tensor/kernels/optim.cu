// Optimizer updates, one thread per element, with the CPU backend's
// arithmetic: AdamW in float32 (torch.optim.AdamW), SGD with momentum in
// double. Compiled without fused multiply-add, the bits equal the CPU's.

// adamw_elem updates element i of one tensor.
__device__ __forceinline__ void adamw_elem(float* w, const float* g, float* m, float* v, long long i,
	float b1, float b2, float c1, float c2, float gscale, float decay, float step, float ibc2, float eps) {
	float gi = g[i] * gscale;
	float mi = b1 * m[i] + c1 * gi;
	float vi = b2 * v[i] + c2 * gi * gi;
	m[i] = mi;
	v[i] = vi;
	w[i] = w[i] * decay - step * mi / (sqrtf(vi) * ibc2 + eps);
}

extern "C" __global__ void adamw_step(float* w, const float* g, float* m, float* v, long long n,
	float b1, float b2, float gscale, float decay, float step, float ibc2, float eps) {
	float c1 = 1.0f - b1, c2 = 1.0f - b2;
	GRID_STRIDE(i, n) adamw_elem(w, g, m, v, i, b1, b2, c1, c2, gscale, decay, step, ibc2, eps);
}

// adamw_tensor is one tensor of adamw_multi, as the host lays it out (80
// bytes): its four arrays, its length, and its step's scalars.
struct adamw_tensor {
	float* w;
	const float* g;
	float* m;
	float* v;
	long long n;
	float b1, b2, gscale, decay, step, ibc2, eps, pad;
	long long pad2;
};

// adamw_multi is adamw_step over count tensors in one launch: tensor k has
// blocks first[k] .. first[k+1]), each of chunk elements (the last one what
// is left), with the arithmetic of adamw_step, so each element gets the same
// bits.
extern "C" __global__ void adamw_multi(const adamw_tensor* ts, const int* first, int count, long long chunk) {
	int b = blockIdx.x, k = find_tensor(first, count, b);
	adamw_tensor t = ts[k];
	long long lo = (long long)(b - first[k]) * chunk, hi = lo + chunk;
	if (hi > t.n) hi = t.n;
	float c1 = 1.0f - t.b1, c2 = 1.0f - t.b2;
	for (long long i = lo + threadIdx.x; i < hi; i += blockDim.x)
		adamw_elem(t.w, t.g, t.m, t.v, i, t.b1, t.b2, c1, c2, t.gscale, t.decay, t.step, t.ibc2, t.eps);
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
