// Reductions in fixed orders: column sums (bias gradients) and Σx² (the global
// gradient norm), each in two passes whose cut depends on the shape only. dt
// gives each void pointer's dtype in parameter order (00_common.cu); partial
// sums are float32 (column sums) or double (Σx²).

// colsum_partial: grid (row chunks, column blocks); p[c·cols+j] is the sum of
// column j over chunk c's rows in order.
extern "C" __global__ void colsum_partial(float* p, const void* m, int rows, int cols, int chunk, int dt) {
	int c = blockIdx.x;
	int j = blockIdx.y * blockDim.x + threadIdx.x;
	if (j >= cols) return;
	int r0 = c * chunk, r1 = min(rows, r0 + chunk);
	float s = 0.0f;
	for (int r = r0; r < r1; r++) s += ld_any(m, (long long)r * cols + j, IS_BF16(dt, 0));
	p[(long long)c * cols + j] = s;
}

// colsum_final: out[j] = Σ_c p[c·cols+j], chunks in order.
extern "C" __global__ void colsum_final(void* out, const float* p, int chunks, int cols, int dt) {
	int j = blockIdx.x * blockDim.x + threadIdx.x;
	if (j >= cols) return;
	float s = 0.0f;
	for (int c = 0; c < chunks; c++) s += p[(long long)c * cols + j];
	st_any(out, j, IS_BF16(dt, 0), s);
}

// sumsq_partial: block b sums x² in double over elements [b·chunk, (b+1)·chunk)
// (each thread a strided slice, then a tree); part holds one double per block
// (the float pointer is 8-byte aligned storage). blockDim.x must be 256.
extern "C" __global__ void sumsq_partial(float* part, const void* x, long long n, long long chunk, int dt) {
	__shared__ double sh[256];
	long long lo = blockIdx.x * chunk, hi = lo + chunk;
	if (hi > n) hi = n;
	double s = 0.0;
	for (long long i = lo + threadIdx.x; i < hi; i += blockDim.x) {
		double v = (double)ld_any(x, i, IS_BF16(dt, 0));
		s += v * v;
	}
	double t = block_sum_d(s, sh);
	if (threadIdx.x == 0) ((double*)part)[blockIdx.x] = t;
}

// sum_f64: one block of 256 adds n doubles (strided, then a tree: an order
// fixed by n) into out[0] (a double): Σx²'s partials, the cross-entropy's rows.
extern "C" __global__ void sum_f64(float* out, const float* part, int blocks) {
	__shared__ double sh[256];
	const double* p = (const double*)part;
	double s = 0.0;
	for (int i = threadIdx.x; i < blocks; i += blockDim.x) s += p[i];
	double t = block_sum_d(s, sh);
	if (threadIdx.x == 0) ((double*)out)[0] = t;
}

// sumsq_tensor is one tensor of sumsq_multi_partial, as the host lays it out
// (32 bytes): its values, length and dtype, and the chunk SumSquares cuts it
// into (sumsqBlocks).
struct sumsq_tensor {
	const void* x;
	long long n;
	long long chunk;
	int dt;
	int pad;
};

// sumsq_multi_partial is sumsq_partial over count tensors in one launch:
// tensor k has blocks first[k] .. first[k+1]) and block b sums its chunk
// exactly as sumsq_partial's block b - first[k] would, into part[b].
extern "C" __global__ void sumsq_multi_partial(float* part, const sumsq_tensor* ts, const int* first, int count) {
	__shared__ double sh[256];
	int b = blockIdx.x, k = find_tensor(first, count, b);
	sumsq_tensor t = ts[k];
	long long lo = (long long)(b - first[k]) * t.chunk, hi = lo + t.chunk;
	if (hi > t.n) hi = t.n;
	double s = 0.0;
	for (long long i = lo + threadIdx.x; i < hi; i += blockDim.x) {
		double v = (double)ld_any(t.x, i, t.dt);
		s += v * v;
	}
	double tot = block_sum_d(s, sh);
	if (threadIdx.x == 0) ((double*)part)[b] = tot;
}

// sumsq_multi_final: block k adds tensor k's partials as sum_f64 adds a
// tensor's, into out[k] (doubles): each tensor's Σx² has SumSquares' bits.
extern "C" __global__ void sumsq_multi_final(float* out, const float* part, const int* first) {
	__shared__ double sh[256];
	int k = blockIdx.x;
	const double* p = (const double*)part + first[k];
	int blocks = first[k + 1] - first[k];
	double s = 0.0;
	for (int i = threadIdx.x; i < blocks; i += blockDim.x) s += p[i];
	double tot = block_sum_d(s, sh);
	if (threadIdx.x == 0) ((double*)out)[k] = tot;
}
