// The emulated cuBLAS: SGEMM by its column-major reference definition,
//   C = alpha * op(A) * op(B) + beta * C,  C m x n, op(A) m x k, op(B) k x n,
// with cuBLAS's argument checks (CUBLAS_STATUS_INVALID_VALUE for a negative
// size, an unknown operation or a leading dimension too small), beta == 0
// not reading C, and each operand's extent checked against the device
// allocations. Each element sums over k in order in fp32; with
// CUBLAS_TF32_TENSOR_OP_MATH the inputs are first rounded to TF32 (10-bit
// mantissa, nearest, ties away), as tensor cores do.
#include <mutex>
#include <set>
#include <stdio.h>
#include <string.h>
#include <string>
#include <vector>

#define EMU_API extern "C" __attribute__((visibility("default")))

extern "C" int cudaemu_check_range(const void *p, size_t n, char *why, size_t whylen);
extern "C" int cudaemu_valid_stream(void *s);
extern "C" int cudaGetDeviceCount(int *n);
extern "C" void cudaemu_enqueue(void *s, void (*fn)(void *), void *ctx);

enum {
	OK = 0,
	NOT_INITIALIZED = 1,
	INVALID_VALUE = 7,
	EXECUTION_FAILED = 13,
};

struct Handle {
	void *stream;
	int math;
};
static std::mutex mu;
static std::set<Handle *> handles;
static thread_local std::string detail;

static int fail(int st, const std::string &d) {
	detail = d;
	return st;
}

EMU_API const char *cublasGetStatusName(int st) {
	switch (st) {
	case 0: return "CUBLAS_STATUS_SUCCESS";
	case 1: return "CUBLAS_STATUS_NOT_INITIALIZED";
	case 3: return "CUBLAS_STATUS_ALLOC_FAILED";
	case 7: return "CUBLAS_STATUS_INVALID_VALUE";
	case 8: return "CUBLAS_STATUS_ARCH_MISMATCH";
	case 11: return "CUBLAS_STATUS_MAPPING_ERROR";
	case 13: return "CUBLAS_STATUS_EXECUTION_FAILED";
	case 14: return "CUBLAS_STATUS_INTERNAL_ERROR";
	case 15: return "CUBLAS_STATUS_NOT_SUPPORTED";
	}
	return "CUBLAS_STATUS_UNKNOWN";
}

EMU_API const char *cublasGetStatusString(int st) {
	static thread_local std::string s;
	switch (st) {
	case 0: s = "the operation completed successfully"; break;
	case 1: s = "the library was not initialized"; break;
	case 7: s = "an invalid numeric value was used as an argument"; break;
	case 13: s = "the GPU program failed to execute"; break;
	default: s = "unknown error"; break;
	}
	if (st != 0 && !detail.empty()) s += " (cudaemu: " + detail + ")";
	return s.c_str();
}

EMU_API int cublasGetProperty(int type, int *v) {
	if (!v) return INVALID_VALUE;
	switch (type) {
	case 0: *v = 13; return OK; // MAJOR_VERSION
	case 1: *v = 0; return OK;  // MINOR_VERSION
	case 2: *v = 0; return OK;  // PATCH_LEVEL
	}
	return INVALID_VALUE;
}

EMU_API int cublasCreate_v2(void **h) {
	if (!h) return fail(INVALID_VALUE, "null pointer");
	int n = 0;
	if (int e = cudaGetDeviceCount(&n)) return fail(NOT_INITIALIZED, "cudaGetDeviceCount failed with " + std::to_string(e));
	Handle *hd = new Handle{nullptr, 0};
	std::lock_guard<std::mutex> g(mu);
	handles.insert(hd);
	*h = hd;
	return OK;
}

static bool valid(void *h) {
	std::lock_guard<std::mutex> g(mu);
	return handles.count((Handle *)h) != 0;
}

EMU_API int cublasDestroy_v2(void *h) {
	std::lock_guard<std::mutex> g(mu);
	if (!handles.erase((Handle *)h)) return fail(NOT_INITIALIZED, "not a live handle (destroyed twice?)");
	delete (Handle *)h;
	return OK;
}

EMU_API int cublasSetStream_v2(void *h, void *s) {
	if (!valid(h)) return fail(NOT_INITIALIZED, "not a live handle");
	if (!cudaemu_valid_stream(s)) return fail(INVALID_VALUE, "not a live stream");
	((Handle *)h)->stream = s;
	return OK;
}

EMU_API int cublasSetMathMode(void *h, int mode) {
	if (!valid(h)) return fail(NOT_INITIALIZED, "not a live handle");
	int base = mode & 0xf;
	if (base != 0 && base != 1 && base != 2 && base != 3) return fail(INVALID_VALUE, "unknown math mode " + std::to_string(mode));
	((Handle *)h)->math = mode;
	return OK;
}

EMU_API int cublasSetWorkspace_v2(void *h, void *p, size_t n) {
	if (!valid(h)) return fail(NOT_INITIALIZED, "not a live handle");
	char why[512];
	if (n > 0 && !cudaemu_check_range(p, n, why, sizeof why)) return fail(INVALID_VALUE, std::string("workspace: ") + why);
	return OK;
}

static float tf32(float x) {
	unsigned u;
	memcpy(&u, &x, 4);
	if ((u & 0x7f800000u) != 0x7f800000u) u = (u + 0x1000u) & 0xffffe000u;
	memcpy(&x, &u, 4);
	return x;
}

// extent is how many elements a rows x cols column-major operand with
// leading dimension ld spans.
static size_t extent(int rows, int cols, int ld) {
	if (rows == 0 || cols == 0) return 0;
	return (size_t)(cols - 1) * ld + rows;
}

static int check_operand(const char *name, const void *p, size_t elems, long long stride, int batch) {
	if (elems == 0) return OK;
	size_t span = elems + (stride > 0 ? (size_t)stride * (batch - 1) : 0);
	char why[512];
	if (!cudaemu_check_range(p, span * sizeof(float), why, sizeof why))
		return fail(EXECUTION_FAILED, std::string("operand ") + name + ": " + why);
	return OK;
}

struct Gemm {
	bool TA, TB, t32, readAB;
	int m, n, k;
	float al, be;
	const float *A;
	int lda;
	long long sa;
	const float *B;
	int ldb;
	long long sb;
	float *C;
	int ldc;
	long long sc;
	int batch;
};

// run_gemm computes a queued SGEMM; each element sums over k in order.
static void run_gemm(void *ctx) {
	Gemm g = *(Gemm *)ctx;
	delete (Gemm *)ctx;
	std::vector<float> acc(g.m);
	for (int b = 0; b < g.batch; b++) {
		const float *a = g.A + g.sa * b, *bb = g.B + g.sb * b;
		float *c = g.C + g.sc * b;
		if (g.TA && !g.TB && g.readAB && !g.t32) {
			// Both operands run along k: dot products of contiguous
			// columns, summed in the same order as below.
			for (int j = 0; j < g.n; j++)
				for (int i = 0; i < g.m; i++) {
					const float *ai = a + (size_t)i * g.lda, *bj = bb + (size_t)j * g.ldb;
					float s = 0.0f;
					for (int l = 0; l < g.k; l++) s += ai[l] * bj[l];
					float *cij = c + i + (size_t)j * g.ldc;
					*cij = g.be == 0.0f ? g.al * s : g.al * s + g.be * *cij;
				}
			continue;
		}
		for (int j = 0; j < g.n; j++) {
			for (int i = 0; i < g.m; i++) acc[i] = 0.0f;
			if (g.readAB)
				for (int l = 0; l < g.k; l++) {
					float bv = g.TB ? bb[j + (size_t)l * g.ldb] : bb[l + (size_t)j * g.ldb];
					if (g.t32) bv = tf32(bv);
					for (int i = 0; i < g.m; i++) {
						float av = g.TA ? a[l + (size_t)i * g.lda] : a[i + (size_t)l * g.lda];
						if (g.t32) av = tf32(av);
						acc[i] += av * bv;
					}
				}
			float *cj = c + (size_t)j * g.ldc;
			for (int i = 0; i < g.m; i++) cj[i] = g.be == 0.0f ? g.al * acc[i] : g.al * acc[i] + g.be * cj[i];
		}
	}
}

static int gemm(void *h, int ta, int tb, int m, int n, int k, const float *alpha, const float *A, int lda, long long sa,
		const float *B, int ldb, long long sb, const float *beta, float *C, int ldc, long long sc, int batch) {
	if (!valid(h)) return fail(NOT_INITIALIZED, "not a live handle");
	if (ta < 0 || ta > 2 || tb < 0 || tb > 2) return fail(INVALID_VALUE, "operation must be N, T or C");
	bool TA = ta != 0, TB = tb != 0;
	int arows = TA ? k : m, brows = TB ? n : k;
	if (m < 0 || n < 0 || k < 0 || batch < 0) return fail(INVALID_VALUE, "negative size");
	if (lda < (arows > 1 ? arows : 1)) return fail(INVALID_VALUE, "lda " + std::to_string(lda) + " < rows of A " + std::to_string(arows));
	if (ldb < (brows > 1 ? brows : 1)) return fail(INVALID_VALUE, "ldb " + std::to_string(ldb) + " < rows of B " + std::to_string(brows));
	if (ldc < (m > 1 ? m : 1)) return fail(INVALID_VALUE, "ldc " + std::to_string(ldc) + " < m " + std::to_string(m));
	if (!alpha || !beta) return fail(INVALID_VALUE, "null alpha or beta");
	if (m == 0 || n == 0 || batch == 0) return OK;
	float al = *alpha, be = *beta;
	bool readAB = k > 0 && al != 0.0f;
	if (readAB) {
		if (int e = check_operand("A", A, extent(arows, TA ? m : k, lda), sa, batch)) return e;
		if (int e = check_operand("B", B, extent(brows, TB ? k : n, ldb), sb, batch)) return e;
	}
	if (int e = check_operand("C", C, extent(m, n, ldc), sc, batch)) return e;
	// Queued on the handle's stream, like the GPU's kernel; the scalars are read now.
	Gemm *g = new Gemm{TA, TB, (((Handle *)h)->math & 0xf) == 3, readAB, m, n, k, al, be, A, lda, sa, B, ldb, sb, C, ldc, sc, batch};
	cudaemu_enqueue(((Handle *)h)->stream, run_gemm, g);
	return OK;
}

EMU_API int cublasSgemm_v2(void *h, int ta, int tb, int m, int n, int k, const float *alpha, const float *A, int lda,
			   const float *B, int ldb, const float *beta, float *C, int ldc) {
	return gemm(h, ta, tb, m, n, k, alpha, A, lda, 0, B, ldb, 0, beta, C, ldc, 0, 1);
}

EMU_API int cublasSgemmStridedBatched(void *h, int ta, int tb, int m, int n, int k, const float *alpha, const float *A,
				      int lda, long long sa, const float *B, int ldb, long long sb, const float *beta,
				      float *C, int ldc, long long sc, int batch) {
	return gemm(h, ta, tb, m, n, k, alpha, A, lda, sa, B, ldb, sb, beta, C, ldc, sc, batch);
}
