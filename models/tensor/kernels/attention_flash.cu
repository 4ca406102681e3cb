// Fused causal attention (flash-attention-2 style) for head widths 32..128.
// qkv is [B,T,3D] (q|k|v, head h at columns h·hd of each), out and dout
// [B,T,D], lse and the row dots [B,H,T] float32. Each of qkv/out/dout/dqkv is
// float32 or bfloat16 (a flag per tensor): read as float32, computed in
// float32, every output rounded once. Tiles live in shared memory as float32
// with a row stride of hd+1 (no bank conflicts between rows); no T×T matrix
// is ever written to global memory. Sums run in a fixed order and there are
// no atomics: the same inputs give the same bits.

#define FA_MAXD 128          // widest head
#define FA_LS (FA_MAXD + 1)  // shared row stride bound
#define FA_BR 32             // forward: queries per block
#define FA_BC 32             // forward: keys per tile
#define FA_THREADS 128       // every fused-attention kernel: 4 warps
#define FB_T 16              // backward: queries and keys per tile

__device__ __forceinline__ float attn_ld(const void* p, long long i, int bf) {
	return bf ? __uint_as_float(((unsigned)((const unsigned short*)p)[i]) << 16) : ((const float*)p)[i];
}

// attn_bf16 rounds to the nearest bfloat16, ties to even; NaN stays a quiet NaN.
__device__ __forceinline__ unsigned short attn_bf16(float x) {
	unsigned b = __float_as_uint(x);
	if ((b & 0x7fffffffu) > 0x7f800000u) return (unsigned short)((b >> 16) | 0x0040u);
	b += 0x7fffu + ((b >> 16) & 1u);
	return (unsigned short)(b >> 16);
}

__device__ __forceinline__ void attn_st(void* p, long long i, float v, int bf) {
	if (bf) ((unsigned short*)p)[i] = attn_bf16(v);
	else ((float*)p)[i] = v;
}

// attn_tile loads rows [r0, r0+rows) of a head's hd columns (starting at col,
// rows ld apart, the sequence's first row at row0) into sh with stride hd+1;
// rows at or past T are zeros.
__device__ __forceinline__ void attn_tile(float* sh, const void* base, long long row0, int ld, int col,
                                          int r0, int rows, int T, int hd, int bf) {
	for (int e = threadIdx.x; e < rows * hd; e += blockDim.x) {
		int r = e / hd, d = e - r * hd, t = r0 + r;
		sh[r * (hd + 1) + d] = t < T ? attn_ld(base, (row0 + t) * ld + col + d, bf) : 0.0f;
	}
}

// flash_attention_forward: one block per (query block of 32, sequence·head),
// the longest rows first. Four threads share a query row: each scores keys
// lane4, lane4+4, ... of a tile and keeps hd/4 output columns
// (lane4, lane4+4, ...) in registers.
extern "C" __global__ void flash_attention_forward(void* out, float* lse, const void* qkv, int T, int H, int hd,
                                                   float scale, int in_bf, int out_bf) {
	__shared__ float sq[FA_BR * FA_LS];
	__shared__ float skv[FA_BC * FA_LS];
	__shared__ float sp[FA_BR * (FA_BC + 1)];
	int qb = gridDim.x - 1 - blockIdx.x, bh = blockIdx.y, h = bh % H;
	int D = H * hd, ld = 3 * D, ls = hd + 1;
	long long row0 = (long long)(bh / H) * T;
	int r0 = qb * FA_BR, r = threadIdx.x >> 2, lane4 = threadIdx.x & 3, i = r0 + r;
	attn_tile(sq, qkv, row0, ld, h * hd, r0, FA_BR, T, hd, in_bf);
	float acc[FA_MAXD / 4];
	for (int c = 0; c < FA_MAXD / 4; c++) acc[c] = 0.0f;
	float m = -INFINITY, l = 0.0f;
	int last = min(T, r0 + FA_BR); // keys past the block's last row are masked: never loaded
	for (int c0 = 0; c0 < last; c0 += FA_BC) {
		__syncthreads(); // the previous V tile has been read
		attn_tile(skv, qkv, row0, ld, D + h * hd, c0, FA_BC, T, hd, in_bf);
		__syncthreads();
		float sc[FA_BC / 4], mx = m;
		for (int k = 0; k < FA_BC / 4; k++) sc[k] = 0.0f;
		for (int d = 0; d < hd; d++) { // q read once for this thread's 8 keys
			float qd = sq[r * ls + d];
			for (int k = 0; k < FA_BC / 4; k++) sc[k] += qd * skv[(lane4 + 4 * k) * ls + d];
		}
		for (int k = 0; k < FA_BC / 4; k++) {
			int j = lane4 + 4 * k;
			float s = (i < T && c0 + j <= i) ? sc[k] * scale : -INFINITY;
			sp[r * (FA_BC + 1) + j] = s;
			mx = fmaxf(mx, s);
		}
		mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
		mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
		float alpha = mx == -INFINITY ? 1.0f : expf(m - mx), sum = 0.0f;
		for (int k = 0; k < FA_BC / 4; k++) {
			int j = lane4 + 4 * k;
			float s = sp[r * (FA_BC + 1) + j];
			float p = s == -INFINITY ? 0.0f : expf(s - mx);
			sp[r * (FA_BC + 1) + j] = p;
			sum += p;
		}
		sum += __shfl_xor_sync(0xffffffffu, sum, 1); // a butterfly: every lane the same bits
		sum += __shfl_xor_sync(0xffffffffu, sum, 2);
		l = l * alpha + sum;
		m = mx;
		for (int c = 0; c < FA_MAXD / 4; c++) acc[c] *= alpha;
		__syncthreads(); // K read, P written
		attn_tile(skv, qkv, row0, ld, 2 * D + h * hd, c0, FA_BC, T, hd, in_bf);
		__syncthreads();
		for (int j = 0; j < FA_BC; j++) {
			float p = sp[r * (FA_BC + 1) + j];
			for (int c = 0; c < FA_MAXD / 4; c++) {
				int d = lane4 + 4 * c;
				if (d < hd) acc[c] += p * skv[j * ls + d];
			}
		}
	}
	if (i >= T) return;
	float inv = 1.0f / l;
	for (int c = 0; c < FA_MAXD / 4; c++) {
		int d = lane4 + 4 * c;
		if (d < hd) attn_st(out, (row0 + i) * D + h * hd + d, acc[c] * inv, out_bf);
	}
	if (lane4 == 0) lse[(long long)bh * T + i] = m + logf(l);
}

// flash_attention_rowdot: dd[b,h,t] = Σ_d dout·out over the head's columns,
// one warp per row (lane-strided, then a butterfly).
extern "C" __global__ void flash_attention_rowdot(float* dd, const void* dout, const void* out, int T, int H, int hd,
                                                  long long rows, int dout_bf, int out_bf) {
	long long row = (long long)blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
	int lane = threadIdx.x & 31;
	if (row >= rows) return;
	int t = (int)(row % T), bh = (int)(row / T), h = bh % H, D = H * hd;
	long long base = ((long long)(bh / H) * T + t) * D + h * hd;
	float s = 0.0f;
	for (int d = lane; d < hd; d += 32) s += attn_ld(dout, base + d, dout_bf) * attn_ld(out, base + d, out_bf);
	for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
	if (lane == 0) dd[row] = s;
}

// flash_bwd_scores recomputes a 16×16 tile from shared q, k, dout, v, lse and
// dd: P = exp(q·k·scale - lse) on and below the diagonal (else 0) into sp, and
// dS = P ⊙ (dout·v - dd)·scale into sds. Each of the 128 threads computes
// rows r and r+8 of key column j, reading k_j and v_j once for both.
__device__ __forceinline__ void flash_bwd_scores(float* sp, float* sds, const float* sq, const float* sk,
                                                 const float* sdo, const float* sv, const float* slse,
                                                 const float* sdd, int r0, int c0, int T, int hd, float scale) {
	int ls = hd + 1, r = threadIdx.x / FB_T, j = threadIdx.x % FB_T;
	float s[2] = {0.0f, 0.0f}, dp[2] = {0.0f, 0.0f};
	for (int d = 0; d < hd; d++) {
		float k = sk[j * ls + d], v = sv[j * ls + d];
		for (int h = 0; h < 2; h++) {
			s[h] += sq[(r + 8 * h) * ls + d] * k;
			dp[h] += sdo[(r + 8 * h) * ls + d] * v;
		}
	}
	for (int h = 0; h < 2; h++) {
		int rr = r + 8 * h, i = r0 + rr;
		float p = (i < T && c0 + j <= i) ? expf(s[h] * scale - slse[rr]) : 0.0f;
		sp[rr * (FB_T + 1) + j] = p;
		sds[rr * (FB_T + 1) + j] = p * (dp[h] - sdd[rr]) * scale;
	}
}

// flash_bwd_stats loads a query tile's lse and dd (0 past T).
__device__ __forceinline__ void flash_bwd_stats(float* slse, float* sdd, const float* lse, const float* dd,
                                                long long bhT, int r0, int T) {
	if (threadIdx.x < FB_T) {
		int i = r0 + threadIdx.x;
		slse[threadIdx.x] = i < T ? lse[bhT + i] : 0.0f;
		sdd[threadIdx.x] = i < T ? dd[bhT + i] : 0.0f;
	}
}

// flash_attention_backward_dkv: one block per (key block of 16, sequence·head)
// keeps its K and V tiles and walks the query blocks from the diagonal down in
// order, summing dV = Pᵀ·dO and dK = dSᵀ·Q in registers: eight threads per key
// row, hd/8 columns each (lane8, lane8+8, ...).
extern "C" __global__ void flash_attention_backward_dkv(void* dqkv, const void* qkv, const void* dout, const float* lse,
                                                        const float* dd, int T, int H, int hd, float scale,
                                                        int in_bf, int dout_bf, int grad_bf) {
	__shared__ float sk[FB_T * FA_LS], sv[FB_T * FA_LS], sq[FB_T * FA_LS], sdo[FB_T * FA_LS];
	__shared__ float sp[FB_T * (FB_T + 1)], sds[FB_T * (FB_T + 1)], slse[FB_T], sdd[FB_T];
	int kb = gridDim.x - 1 - blockIdx.x, bh = blockIdx.y, h = bh % H;
	int D = H * hd, ld = 3 * D, ls = hd + 1;
	long long row0 = (long long)(bh / H) * T, bhT = (long long)bh * T;
	int c0 = kb * FB_T, j = threadIdx.x >> 3, lane8 = threadIdx.x & 7;
	attn_tile(sk, qkv, row0, ld, D + h * hd, c0, FB_T, T, hd, in_bf);
	attn_tile(sv, qkv, row0, ld, 2 * D + h * hd, c0, FB_T, T, hd, in_bf);
	float dk[FA_MAXD / 8], dv[FA_MAXD / 8];
	for (int c = 0; c < FA_MAXD / 8; c++) dk[c] = dv[c] = 0.0f;
	for (int r0 = c0; r0 < T; r0 += FB_T) {
		__syncthreads(); // the previous query tile has been read
		attn_tile(sq, qkv, row0, ld, h * hd, r0, FB_T, T, hd, in_bf);
		attn_tile(sdo, dout, row0, D, h * hd, r0, FB_T, T, hd, dout_bf);
		flash_bwd_stats(slse, sdd, lse, dd, bhT, r0, T);
		__syncthreads();
		flash_bwd_scores(sp, sds, sq, sk, sdo, sv, slse, sdd, r0, c0, T, hd, scale);
		__syncthreads();
		for (int r = 0; r < FB_T; r++) {
			float p = sp[r * (FB_T + 1) + j], ds = sds[r * (FB_T + 1) + j];
			for (int c = 0; c < FA_MAXD / 8; c++) {
				int d = lane8 + 8 * c;
				if (d < hd) {
					dv[c] += p * sdo[r * ls + d];
					dk[c] += ds * sq[r * ls + d];
				}
			}
		}
	}
	if (c0 + j >= T) return;
	long long o = (row0 + c0 + j) * ld + h * hd;
	for (int c = 0; c < FA_MAXD / 8; c++) {
		int d = lane8 + 8 * c;
		if (d < hd) {
			attn_st(dqkv, o + D + d, dk[c], grad_bf);
			attn_st(dqkv, o + 2 * D + d, dv[c], grad_bf);
		}
	}
}

// flash_attention_backward_dq: one block per (query block of 16,
// sequence·head) keeps its q, dout, lse and dd and walks the key blocks up to
// the diagonal in order, summing dQ = dS·K in registers.
extern "C" __global__ void flash_attention_backward_dq(void* dqkv, const void* qkv, const void* dout, const float* lse,
                                                       const float* dd, int T, int H, int hd, float scale,
                                                       int in_bf, int dout_bf, int grad_bf) {
	__shared__ float sk[FB_T * FA_LS], sv[FB_T * FA_LS], sq[FB_T * FA_LS], sdo[FB_T * FA_LS];
	__shared__ float sp[FB_T * (FB_T + 1)], sds[FB_T * (FB_T + 1)], slse[FB_T], sdd[FB_T];
	int qb = gridDim.x - 1 - blockIdx.x, bh = blockIdx.y, h = bh % H;
	int D = H * hd, ld = 3 * D, ls = hd + 1;
	long long row0 = (long long)(bh / H) * T, bhT = (long long)bh * T;
	int r0 = qb * FB_T, r = threadIdx.x >> 3, lane8 = threadIdx.x & 7;
	attn_tile(sq, qkv, row0, ld, h * hd, r0, FB_T, T, hd, in_bf);
	attn_tile(sdo, dout, row0, D, h * hd, r0, FB_T, T, hd, dout_bf);
	flash_bwd_stats(slse, sdd, lse, dd, bhT, r0, T);
	float dq[FA_MAXD / 8];
	for (int c = 0; c < FA_MAXD / 8; c++) dq[c] = 0.0f;
	for (int c0 = 0; c0 <= r0; c0 += FB_T) {
		__syncthreads(); // the previous key tile has been read
		attn_tile(sk, qkv, row0, ld, D + h * hd, c0, FB_T, T, hd, in_bf);
		attn_tile(sv, qkv, row0, ld, 2 * D + h * hd, c0, FB_T, T, hd, in_bf);
		__syncthreads();
		flash_bwd_scores(sp, sds, sq, sk, sdo, sv, slse, sdd, r0, c0, T, hd, scale);
		__syncthreads();
		for (int j = 0; j < FB_T; j++) {
			float ds = sds[r * (FB_T + 1) + j];
			for (int c = 0; c < FA_MAXD / 8; c++) {
				int d = lane8 + 8 * c;
				if (d < hd) dq[c] += ds * sk[j * ls + d];
			}
		}
	}
	if (r0 + r >= T) return;
	long long o = (row0 + r0 + r) * ld + h * hd;
	for (int c = 0; c < FA_MAXD / 8; c++) {
		int d = lane8 + 8 * c;
		if (d < hd) attn_st(dqkv, o + d, dq[c], grad_bf);
	}
}
