// Elementwise kernels: a chunk of CHUNK elements a thread (GRID_CHUNKS),
// grid-stride loops; dt gives each void pointer's dtype (00_common.cu), in
// parameter order.

extern "C" __global__ void add(void* y, const void* a, const void* b, long long n, int dt) {
	int by = IS_BF16(dt, 0), ba = IS_BF16(dt, 1), bb = IS_BF16(dt, 2);
	bool vy = vec_ok(y, 0, by), va = vec_ok(a, 0, ba), vb = vec_ok(b, 0, bb);
	float u[CHUNK], v[CHUNK];
	GRID_CHUNKS(j0, w, n) {
		ldc(u, a, j0, (int)w, ba, va);
		ldc(v, b, j0, (int)w, bb, vb);
		for (int e = 0; e < CHUNK; e++) u[e] = u[e] + v[e];
		stc(y, j0, (int)w, by, vy, u);
	}
}

extern "C" __global__ void scale(void* x, float s, long long n, int dt) {
	int bx = IS_BF16(dt, 0);
	bool vx = vec_ok(x, 0, bx);
	float u[CHUNK];
	GRID_CHUNKS(j0, w, n) {
		ldc(u, x, j0, (int)w, bx, vx);
		for (int e = 0; e < CHUNK; e++) u[e] = u[e] * s;
		stc(x, j0, (int)w, bx, vx, u);
	}
}
