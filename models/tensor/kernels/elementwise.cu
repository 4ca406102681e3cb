// Elementwise kernels: one thread per element, grid-stride loops.

extern "C" __global__ void add_f32(float* y, const float* a, const float* b, long long n) {
	for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)
		y[i] = a[i] + b[i];
}

extern "C" __global__ void scale_f32(float* x, float s, long long n) {
	for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)
		x[i] = x[i] * s;
}

// bias_residual sets y[r,j] = residual[r,j] + bias[j]; either may be null
// (not both). The GEMM then adds x·wᵀ onto y.
extern "C" __global__ void bias_residual(float* y, const float* bias, const float* residual, int rows, int cols) {
	long long n = (long long)rows * cols;
	for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
		int j = (int)(i % cols);
		if (residual == 0) y[i] = bias[j];
		else if (bias == 0) y[i] = residual[i];
		else y[i] = residual[i] + bias[j];
	}
}
