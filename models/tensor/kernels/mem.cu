// Copies between dtypes: a chunk of CHUNK elements a thread (GRID_CHUNKS),
// grid-stride loops; dt gives each void pointer's dtype (00_common.cu), in
// parameter order.

// convert copies src into dst, converting between dtypes (rounding to nearest
// even into bfloat16; widening is exact).
extern "C" __global__ void convert(void* dst, const void* src, long long n, int dt) {
	int bd = IS_BF16(dt, 0), bs = IS_BF16(dt, 1);
	bool vd = vec_ok(dst, 0, bd), vs = vec_ok(src, 0, bs);
	float u[CHUNK];
	GRID_CHUNKS(j0, w, n) {
		ldc(u, src, j0, (int)w, bs, vs);
		stc(dst, j0, (int)w, bd, vd, u);
	}
}
