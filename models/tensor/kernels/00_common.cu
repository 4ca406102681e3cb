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
