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
