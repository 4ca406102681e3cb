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

// dt gives each void pointer's dtype in parameter order (00_common.cu); a
// thread takes a chunk of CHUNK elements at a time (GRID_CHUNKS).

extern "C" __global__ void gelu_forward(void* y, void* th, const void* x, long long n, int dt) {
	int by = IS_BF16(dt, 0), bt = IS_BF16(dt, 1), bx = IS_BF16(dt, 2);
	bool vy = vec_ok(y, 0, by), vt = vec_ok(th, 0, bt), vx = vec_ok(x, 0, bx);
	float u[CHUNK], t[CHUNK];
	GRID_CHUNKS(j0, w, n) {
		ldc(u, x, j0, (int)w, bx, vx);
		for (int e = 0; e < CHUNK; e++) {
			float v = u[e];
			t[e] = gelu_tanh(GELU_C * (v + GELU_A * v * v * v));
			u[e] = 0.5f * v * (1.0f + t[e]);
		}
		stc(th, j0, (int)w, bt, vt, t);
		stc(y, j0, (int)w, by, vy, u);
	}
}

// gelu_backward reads the saved th as stored (rounded where it is bfloat16).
extern "C" __global__ void gelu_backward(void* dx, const void* dy, const void* x, const void* th, long long n, int dt) {
	int bdx = IS_BF16(dt, 0), bdy = IS_BF16(dt, 1), bx = IS_BF16(dt, 2), bt = IS_BF16(dt, 3);
	bool vdx = vec_ok(dx, 0, bdx), vdy = vec_ok(dy, 0, bdy), vx = vec_ok(x, 0, bx), vt = vec_ok(th, 0, bt);
	float d[CHUNK], u[CHUNK], t[CHUNK];
	GRID_CHUNKS(j0, w, n) {
		ldc(d, dy, j0, (int)w, bdy, vdy);
		ldc(u, x, j0, (int)w, bx, vx);
		ldc(t, th, j0, (int)w, bt, vt);
		for (int e = 0; e < CHUNK; e++) {
			float v = u[e], te = t[e];
			float g = 0.5f * (1.0f + te) + 0.5f * v * (1.0f - te * te) * GELU_C * (1.0f + GELU_3A * v * v);
			d[e] = d[e] * g;
		}
		stc(dx, j0, (int)w, bdx, vdx, d);
	}
}

// Exact GELU: y = x·Φ(x), Φ(x) = (1 + erf(x/√2))/2, saving Φ; the backward is
// dy·(Φ(x) + x·φ(x)) with φ the standard normal density.
extern "C" __global__ void gelu_exact_forward(void* y, void* cdf, const void* x, long long n, int dt) {
	int by = IS_BF16(dt, 0), bc = IS_BF16(dt, 1), bx = IS_BF16(dt, 2);
	bool vy = vec_ok(y, 0, by), vc = vec_ok(cdf, 0, bc), vx = vec_ok(x, 0, bx);
	float u[CHUNK], p[CHUNK];
	GRID_CHUNKS(j0, w, n) {
		ldc(u, x, j0, (int)w, bx, vx);
		for (int e = 0; e < CHUNK; e++) {
			p[e] = 0.5f * (1.0f + erff(u[e] * 0.70710678118654752f));
			u[e] = u[e] * p[e];
		}
		stc(cdf, j0, (int)w, bc, vc, p);
		stc(y, j0, (int)w, by, vy, u);
	}
}

extern "C" __global__ void gelu_exact_backward(void* dx, const void* dy, const void* x, const void* cdf, long long n, int dt) {
	int bdx = IS_BF16(dt, 0), bdy = IS_BF16(dt, 1), bx = IS_BF16(dt, 2), bc = IS_BF16(dt, 3);
	bool vdx = vec_ok(dx, 0, bdx), vdy = vec_ok(dy, 0, bdy), vx = vec_ok(x, 0, bx), vc = vec_ok(cdf, 0, bc);
	float d[CHUNK], u[CHUNK], p[CHUNK];
	GRID_CHUNKS(j0, w, n) {
		ldc(d, dy, j0, (int)w, bdy, vdy);
		ldc(u, x, j0, (int)w, bx, vx);
		ldc(p, cdf, j0, (int)w, bc, vc);
		for (int e = 0; e < CHUNK; e++) {
			float pdf = 0.3989422804014327f * expf(-0.5f * u[e] * u[e]);
			d[e] = d[e] * (p[e] + u[e] * pdf);
		}
		stc(dx, j0, (int)w, bdx, vdx, d);
	}
}
