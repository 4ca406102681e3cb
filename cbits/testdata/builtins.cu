// Every builtin the kernels may use, in kernels
// that compute something checkable. Real NVRTC compiles this file in cbits'
// tests and the emulator runs it in cudaemu's, so the emulator's dialect is
// checked against CUDA's own. Header-free NVRTC has no INFINITY, NAN or
// FLT_MAX (they come from headers): +inf is __int_as_float(0x7f800000).

template <typename T> __device__ __forceinline__ T square(T v) { return v * v; }

__device__ __forceinline__ float warp_sum(float v) {
	for (int o = warpSize / 2; o > 0; o /= 2) v += __shfl_down_sync(0xffffffffu, v, o);
	return v; // lane 0 holds the warp's total
}

// row_stats: one block per row (rows along blockIdx.y * gridDim.x + blockIdx.x),
// blockDim.x threads; dynamic shared memory holds one float per warp.
// out[3*row] = sum of squares, out[3*row+1] = max, out[3*row+2] = f(first element).
extern "C" __global__ void row_stats(float *__restrict__ out, const float *__restrict__ in, int cols, unsigned flags,
				     long long stride) {
	extern __shared__ float warp_part[];
	__shared__ float row_max[32];
	int row = blockIdx.y * gridDim.x + blockIdx.x;
	const float *x = in + row * stride;
	float s = 0.0f, m = -__int_as_float(0x7f800000);
	for (int j = threadIdx.x; j < cols; j += blockDim.x) {
		s += square(x[j]);
		m = fmaxf(m, x[j]);
	}
	unsigned lane = threadIdx.x % warpSize, warp = threadIdx.x / warpSize;
	s = warp_sum(s);
	for (int o = 16; o > 0; o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
	if (lane == 0) {
		warp_part[warp] = s;
		row_max[warp] = m;
	}
	__syncthreads();
	if (warp == 0) {
		unsigned nw = blockDim.x / warpSize;
		float t = lane < nw ? warp_part[lane] : 0.0f;
		float mm = lane < nw ? row_max[lane] : -__int_as_float(0x7f800000);
		__syncwarp();
		t = warp_sum(t);
		for (int o = 16; o > 0; o >>= 1) mm = fmaxf(mm, __shfl_xor_sync(0xffffffffu, mm, o));
		if (lane == 0) {
			float v = x[0];
			float f = expf(v) + logf(1.0f + fabsf(v)) + tanhf(v) + sqrtf(fabsf(v)) + rsqrtf(1.0f + v * v) + erff(v) +
				  powf(fabsf(v), 1.5f) + floorf(v) + fminf(v, 0.0f);
			if (flags & 1u) f = -f;
			out[3 * row] = t;
			out[3 * row + 1] = mm;
			out[3 * row + 2] = f + (float)(min(cols, 3) + max(0, -cols));
		}
	}
}

// extras: builtins beyond the list that both sides provide: __shfl_sync,
// __shfl_up_sync, __ldg, float4/float2, bit casts. One warp per block.
// out[i] = lane 0's x + the previous lane's x (own x on lane 0) + the float4
// sum of x[4*(i/4) ..] + bits round trip of x[i].
extern "C" __global__ void extras(float *out, const float *x) {
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	float v = __ldg(x + i);
	float first = __shfl_sync(0xffffffffu, v, 0);
	float prev = __shfl_up_sync(0xffffffffu, v, 1);
	float4 q = reinterpret_cast<const float4 *>(x)[i / 4];
	float2 h = make_float2(q.x + q.y, q.z + q.w);
	out[i] = first + prev + (h.x + h.y) + __uint_as_float(__float_as_uint(v)) - __int_as_float(__float_as_int(v));
}
