// Helpers shared by every kernel file; the backend compiles all files of this
// directory as one translation unit, this one first. Block sizes are
// multiples of 32 and at most 1024. Reductions have a fixed order: each thread
// sums a strided slice in index order, a warp combines by a shuffle butterfly
// (addition commutes, so every lane gets the same bits), and the warps' sums are
// added in warp order.

#ifndef INFINITY
#define INFINITY __int_as_float(0x7f800000)
#endif

// block_sum returns the sum of v over the block to every thread; sh holds 32
// floats of shared memory.
__device__ __forceinline__ float block_sum(float v, float* sh) {
	for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
	int lane = threadIdx.x & 31, w = threadIdx.x >> 5, nw = blockDim.x >> 5;
	__syncthreads(); // sh may still be read from a previous call
	if (lane == 0) sh[w] = v;
	__syncthreads();
	float t = 0.0f;
	for (int i = 0; i < nw; i++) t += sh[i];
	return t;
}

// block_max returns the maximum of v over the block to every thread.
__device__ __forceinline__ float block_max(float v, float* sh) {
	for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
	int lane = threadIdx.x & 31, w = threadIdx.x >> 5, nw = blockDim.x >> 5;
	__syncthreads();
	if (lane == 0) sh[w] = v;
	__syncthreads();
	float t = sh[0];
	for (int i = 1; i < nw; i++) t = fmaxf(t, sh[i]);
	return t;
}

// block_sum_d is block_sum in double through shared memory (shuffles carry
// float and int only): a tree over sh[0..blockDim.x), which must be a power
// of two. Every thread gets the sum (the tree ends at a barrier).
__device__ __forceinline__ double block_sum_d(double v, double* sh) {
	sh[threadIdx.x] = v;
	__syncthreads();
	for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {
		if (threadIdx.x < s) sh[threadIdx.x] += sh[threadIdx.x + s];
		__syncthreads();
	}
	return sh[0];
}

// Storage dtypes. A kernel that takes tensors of either dtype has them as void
// pointers and a last argument dt: bit k is set when its k-th void pointer
// (in parameter order, from 0) holds bfloat16, clear for float32. Every value
// is read as float32 and computed in float32; a bfloat16 output is written
// rounded once to nearest even. Header-free NVRTC has no cuda_bf16.h, so a
// bfloat16 is its raw 16 bits: the top half of a float32.

__device__ __forceinline__ float bf16_to_f32(unsigned short h) { return __uint_as_float((unsigned)h << 16); }

// f32_to_bf16 rounds to nearest even, as the host's ToBF16 does: NaN stays NaN
// (quiet, sign kept), a finite value past the largest bfloat16 becomes ±inf.
__device__ __forceinline__ unsigned short f32_to_bf16(float x) {
	unsigned u = __float_as_uint(x);
	if ((u & 0x7fffffffu) > 0x7f800000u) return (unsigned short)((u >> 16) | 0x40u);
	u += 0x7fffu + ((u >> 16) & 1u);
	return (unsigned short)(u >> 16);
}

#define IS_BF16(dt, k) (((dt) >> (k)) & 1)

// ld_any reads element i of a tensor of either dtype as float32.
__device__ __forceinline__ float ld_any(const void* p, long long i, int bf) {
	return bf ? bf16_to_f32(((const unsigned short*)p)[i]) : ((const float*)p)[i];
}

// st_any writes v to element i, rounded where the tensor is bfloat16.
__device__ __forceinline__ void st_any(void* p, long long i, int bf, float v) {
	if (bf) ((unsigned short*)p)[i] = f32_to_bf16(v);
	else ((float*)p)[i] = v;
}

// GRID_STRIDE runs i over [0, n) in a grid-stride loop, one element a thread.
#define GRID_STRIDE(i, n) for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < (n); i += (long long)gridDim.x * blockDim.x)

// Row kernels give each row one warp, several rows a block (row r is warp
// r % (blockDim.x / 32) of block r / (blockDim.x / 32)). Lane l owns the
// chunks l, l + 32, l + 64, ... of CHUNK consecutive elements of its row and
// goes through them in order; the lanes then combine by a butterfly, so every
// lane holds the same bits. A whole chunk is read in 16-byte loads (one of
// eight bfloat16, two of four float32) where the row lies 16-byte aligned,
// else element by element: the same additions in the same order either way,
// so the result does not depend on where a tensor lies, only on its shape.
#define CHUNK 8

__device__ __forceinline__ float warp_sum(float v) {
	for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
	return v;
}

// row_of is the row of this thread's warp.
__device__ __forceinline__ long long row_of(void) { return (long long)blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5); }

// vec_ok says whether element i of p lies 16-byte aligned.
__device__ __forceinline__ bool vec_ok(const void* p, long long i, int bf) {
	return (((unsigned long long)p + (unsigned long long)i * (bf ? 2 : 4)) & 15) == 0;
}

// ld8 reads the CHUNK elements from i of p into v, in 16-byte loads when vec.
__device__ __forceinline__ void ld8(float* v, const void* p, long long i, int bf, bool vec) {
	if (vec && bf) {
		int4 q = *(const int4*)((const unsigned short*)p + i);
		unsigned w[4] = {(unsigned)q.x, (unsigned)q.y, (unsigned)q.z, (unsigned)q.w};
		for (int k = 0; k < 4; k++) {
			v[2 * k] = bf16_to_f32((unsigned short)(w[k] & 0xffffu)); // element 0 of a pair is the low half
			v[2 * k + 1] = bf16_to_f32((unsigned short)(w[k] >> 16));
		}
	} else if (vec) {
		float4 a = *(const float4*)((const float*)p + i), b = *(const float4*)((const float*)p + i + 4);
		v[0] = a.x, v[1] = a.y, v[2] = a.z, v[3] = a.w, v[4] = b.x, v[5] = b.y, v[6] = b.z, v[7] = b.w;
	} else {
		for (int e = 0; e < CHUNK; e++) v[e] = ld_any(p, i + e, bf);
	}
}

// st8 writes the CHUNK values of v from i of p (rounded where bfloat16), in
// 16-byte stores when vec.
__device__ __forceinline__ void st8(void* p, long long i, int bf, bool vec, const float* v) {
	if (vec && bf) {
		unsigned w[4];
		for (int k = 0; k < 4; k++) w[k] = (unsigned)f32_to_bf16(v[2 * k]) | ((unsigned)f32_to_bf16(v[2 * k + 1]) << 16);
		*(int4*)((unsigned short*)p + i) = make_int4((int)w[0], (int)w[1], (int)w[2], (int)w[3]);
	} else if (vec) {
		*(float4*)((float*)p + i) = make_float4(v[0], v[1], v[2], v[3]);
		*(float4*)((float*)p + i + 4) = make_float4(v[4], v[5], v[6], v[7]);
	} else {
		for (int e = 0; e < CHUNK; e++) st_any(p, i + e, bf, v[e]);
	}
}

// ldc reads the first n (at most CHUNK) elements from i of p: a whole chunk
// through ld8, a row's last partial chunk element by element (the rest of v
// is 0). The loops have constant bounds, so v stays in registers.
__device__ __forceinline__ void ldc(float* v, const void* p, long long i, int n, int bf, bool vec) {
	if (n == CHUNK) {
		ld8(v, p, i, bf, vec);
		return;
	}
	for (int e = 0; e < CHUNK; e++) v[e] = e < n ? ld_any(p, i + e, bf) : 0.0f;
}

// stc writes the first n (at most CHUNK) values of v from i of p.
__device__ __forceinline__ void stc(void* p, long long i, int n, int bf, bool vec, const float* v) {
	if (n == CHUNK) {
		st8(p, i, bf, vec, v);
		return;
	}
	for (int e = 0; e < CHUNK; e++)
		if (e < n) st_any(p, i + e, bf, v[e]);
}

// ROW_CHUNKS runs j0 over the first elements of the lane's chunks of a row of
// n, with w = how many of the chunk's CHUNK elements are in the row.
#define ROW_CHUNKS(j0, w, n) for (int j0 = (threadIdx.x & 31) * CHUNK, w = min(CHUNK, (n) - j0); j0 < (n); j0 += 32 * CHUNK, w = min(CHUNK, (n) - j0))

// Multi-tensor kernels run one launch over a list of tensors: tensor k has
// the blocks first[k] .. first[k+1]), first ascending from 0 (count + 1 entries).
// find_tensor is the tensor block b works on: the last k with first[k] <= b.
__device__ __forceinline__ int find_tensor(const int* first, int count, int b) {
	int lo = 0, hi = count - 1;
	while (lo < hi) {
		int mid = (lo + hi + 1) / 2;
		if (first[mid] <= b) lo = mid;
		else hi = mid - 1;
	}
	return lo;
}


// GRID_CHUNKS runs j0 over [0, n) a chunk of CHUNK elements a thread in a
// grid-stride loop, with w = how many of the chunk's elements are below n:
// elementwise kernels read and write a chunk with ldc and stc (16-byte
// accesses where a tensor is aligned; an element's result does not depend on
// how it is read).
#define GRID_CHUNKS(j0, w, n)                                                                            \
	for (long long j0 = (blockIdx.x * (long long)blockDim.x + threadIdx.x) * CHUNK, w = min((long long)CHUNK, (n) - j0); \
	     j0 < (n); j0 += (long long)gridDim.x * blockDim.x * CHUNK, w = min((long long)CHUNK, (n) - j0))
