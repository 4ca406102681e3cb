// Token and position embeddings. The backward pass owns each output row: the
// host lists, for every distinct token, the rows that carry it in row order,
// and one thread per (token, column) adds them in that order onto zero, so the
// result equals the CPU backend's scatter-add bit for bit with no atomics.

// embed_forward: grid (N rows, column blocks), y[r] = wte[tokens[r]] (+ wpe[r % T]).
extern "C" __global__ void embed_forward(float* y, const float* wte, const float* wpe, const int* tokens, int T, int D) {
	int r = blockIdx.x;
	int j = blockIdx.y * blockDim.x + threadIdx.x;
	if (j >= D) return;
	long long tok = tokens[r];
	float v = wte[tok * D + j];
	if (wpe != 0) v = v + wpe[(long long)(r % T) * D + j];
	y[(long long)r * D + j] = v;
}

// embed_backward_wte: grid (distinct tokens, column blocks). uniq[u] is a token,
// rows[start[u] .. start[u+1]) the rows holding it, ascending. Rows of dwte
// for tokens absent from the batch are zeroed beforehand.
extern "C" __global__ void embed_backward_wte(float* dwte, const float* dy, const int* uniq, const int* start, const int* rows, int D) {
	int u = blockIdx.x;
	int j = blockIdx.y * blockDim.x + threadIdx.x;
	if (j >= D) return;
	float s = 0.0f;
	for (int k = start[u]; k < start[u + 1]; k++) s += dy[(long long)rows[k] * D + j];
	dwte[(long long)uniq[u] * D + j] = s;
}

// embed_backward_wpe: grid (positions, column blocks); position t sums rows
// t, T+t, 2T+t, ... of dy in order. Rows of dwpe past T are zeroed beforehand.
extern "C" __global__ void embed_backward_wpe(float* dwpe, const float* dy, int N, int T, int D) {
	int t = blockIdx.x;
	int j = blockIdx.y * blockDim.x + threadIdx.x;
	if (j >= D) return;
	float s = 0.0f;
	for (int r = t; r < N; r += T) s += dy[(long long)r * D + j];
	dwpe[(long long)t * D + j] = s;
}
