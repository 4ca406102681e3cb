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

// dt gives each void pointer's dtype in parameter order (00_common.cu).

extern "C" __global__ void gelu_forward(void* y, void* th, const void* x, long long n, int dt) {
	GRID_STRIDE(i, n) {
		float v = ld_any(x, i, IS_BF16(dt, 2));
		float t = gelu_tanh(GELU_C * (v + GELU_A * v * v * v));
		st_any(th, i, IS_BF16(dt, 1), t);
		st_any(y, i, IS_BF16(dt, 0), 0.5f * v * (1.0f + t));
	}
}

// gelu_backward reads the saved th as stored (rounded where it is bfloat16).
extern "C" __global__ void gelu_backward(void* dx, const void* dy, const void* x, const void* th, long long n, int dt) {
	GRID_STRIDE(i, n) {
		float v = ld_any(x, i, IS_BF16(dt, 2)), t = ld_any(th, i, IS_BF16(dt, 3));
		float g = 0.5f * (1.0f + t) + 0.5f * v * (1.0f - t * t) * GELU_C * (1.0f + GELU_3A * v * v);
		st_any(dx, i, IS_BF16(dt, 0), ld_any(dy, i, IS_BF16(dt, 1)) * g);
	}
}

// Exact GELU: y = x·Φ(x), Φ(x) = (1 + erf(x/√2))/2, saving Φ; the backward is
// dy·(Φ(x) + x·φ(x)) with φ the standard normal density.
extern "C" __global__ void gelu_exact_forward(void* y, void* cdf, const void* x, long long n, int dt) {
	GRID_STRIDE(i, n) {
		float v = ld_any(x, i, IS_BF16(dt, 2));
		float p = 0.5f * (1.0f + erff(v * 0.70710678118654752f));
		st_any(cdf, i, IS_BF16(dt, 1), p);
		st_any(y, i, IS_BF16(dt, 0), v * p);
	}
}

extern "C" __global__ void gelu_exact_backward(void* dx, const void* dy, const void* x, const void* cdf, long long n, int dt) {
	GRID_STRIDE(i, n) {
		float v = ld_any(x, i, IS_BF16(dt, 2));
		float pdf = 0.3989422804014327f * expf(-0.5f * v * v);
		st_any(dx, i, IS_BF16(dt, 0), ld_any(dy, i, IS_BF16(dt, 1)) * (ld_any(cdf, i, IS_BF16(dt, 3)) + v * pdf));
	}
}
