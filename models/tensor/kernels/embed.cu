// Token and position embeddings. The backward pass owns each output row: the
// host lists, for every distinct token, the rows that carry it in row order,
// and one thread per (token, column) adds them in that order onto zero, so the
// result equals the CPU backend's scatter-add bit for bit with no atomics.
// dt gives each void pointer's dtype in parameter order (00_common.cu).

// embed_forward: grid (N rows, column blocks), y[r] = wte[tokens[r]] (+ wpe[r % T]).
extern "C" __global__ void embed_forward(void* y, const void* wte, const void* wpe, const int* tokens, int T, int D, int dt) {
	int r = blockIdx.x;
	int j = blockIdx.y * blockDim.x + threadIdx.x;
	if (j >= D) return;
	long long tok = tokens[r];
	float v = ld_any(wte, tok * D + j, IS_BF16(dt, 1));
	if (wpe != 0) v = v + ld_any(wpe, (long long)(r % T) * D + j, IS_BF16(dt, 2));
	st_any(y, (long long)r * D + j, IS_BF16(dt, 0), v);
}

// embed_backward_wte: grid (distinct tokens, column blocks). uniq[u] is a token,
// rows[start[u] .. start[u+1]) the rows holding it, ascending. Rows of dwte
// for tokens absent from the batch are zeroed beforehand.
extern "C" __global__ void embed_backward_wte(void* dwte, const void* dy, const int* uniq, const int* start, const int* rows, int D, int dt) {
	int u = blockIdx.x;
	int j = blockIdx.y * blockDim.x + threadIdx.x;
	if (j >= D) return;
	float s = 0.0f;
	for (int k = start[u]; k < start[u + 1]; k++) s += ld_any(dy, (long long)rows[k] * D + j, IS_BF16(dt, 1));
	st_any(dwte, (long long)uniq[u] * D + j, IS_BF16(dt, 0), s);
}

// embed_backward_wpe: grid (positions, column blocks); position t sums rows
// t, T+t, 2T+t, ... of dy in order. Rows of dwpe past T are zeroed beforehand.
extern "C" __global__ void embed_backward_wpe(void* dwpe, const void* dy, int N, int T, int D, int dt) {
	int t = blockIdx.x;
	int j = blockIdx.y * blockDim.x + threadIdx.x;
	if (j >= D) return;
	float s = 0.0f;
	for (int r = t; r < N; r += T) s += ld_any(dy, (long long)r * D + j, IS_BF16(dt, 1));
	st_any(dwpe, (long long)t * D + j, IS_BF16(dt, 0), s);
}
