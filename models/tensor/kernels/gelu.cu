// GELU with the tanh approximation, and the exact GELU x·Φ(x) (erff). tanh is the rational function the CPU
// backend uses (Eigen's float32 tanh), with the same operations in the same
// order; compiled without fused multiply-add, the bits equal the CPU's.

#define GELU_C 0.7978845608028654f
#define GELU_A 0.044715f
#define GELU_3A 0.134145f

__device__ __forceinline__ float gelu_tanh(float u) {
	const float clamp = 7.90531110763549805f;
	if (u > clamp) u = clamp;
	else if (u < -clamp) u = -clamp;
	float u2 = u * u;
	float p = -2.76076847742355e-16f;
	p = p * u2 + 2.00018790482477e-13f;
	p = p * u2 + -8.60467152213735e-11f;
	p = p * u2 + 5.12229709037114e-08f;
	p = p * u2 + 1.48572235717979e-05f;
	p = p * u2 + 6.37261928875436e-04f;
	p = p * u2 + 4.89352455891786e-03f;
	float q = 1.19825839466702e-06f;
	q = q * u2 + 1.18534705686654e-04f;
	q = q * u2 + 2.26843463243900e-03f;
	q = q * u2 + 4.89352518554385e-03f;
	return u * p / q;
}

extern "C" __global__ void gelu_forward(float* y, float* th, const float* x, long long n) {
	for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
		float v = x[i];
		float t = gelu_tanh(GELU_C * (v + GELU_A * v * v * v));
		th[i] = t;
		y[i] = 0.5f * v * (1.0f + t);
	}
}

extern "C" __global__ void gelu_backward(float* dx, const float* dy, const float* x, const float* th, long long n) {
	for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
		float v = x[i], t = th[i];
		float g = 0.5f * (1.0f + t) + 0.5f * v * (1.0f - t * t) * GELU_C * (1.0f + GELU_3A * v * v);
		dx[i] = dy[i] * g;
	}
}

// Exact GELU: y = x·Φ(x), Φ(x) = (1 + erf(x/√2))/2, saving Φ; the backward is
// dy·(Φ(x) + x·φ(x)) with φ the standard normal density.
extern "C" __global__ void gelu_exact_forward(float* y, float* cdf, const float* x, long long n) {
	for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
		float v = x[i];
		float p = 0.5f * (1.0f + erff(v * 0.70710678118654752f));
		cdf[i] = p;
		y[i] = v * p;
	}
}

extern "C" __global__ void gelu_exact_backward(float* dx, const float* dy, const float* x, const float* cdf, long long n) {
	for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
		float v = x[i];
		float pdf = 0.3989422804014327f * expf(-0.5f * v * v);
		dx[i] = dy[i] * (cdf[i] + v * pdf);
	}
}
