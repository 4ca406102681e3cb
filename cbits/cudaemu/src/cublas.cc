// The emulated cuBLAS: SGEMM by its column-major reference definition,
//   C = alpha * op(A) * op(B) + beta * C,  C m x n, op(A) m x k, op(B) k x n,
// with cuBLAS's argument checks (CUBLAS_STATUS_INVALID_VALUE for a negative
// size, an unknown operation or a leading dimension too small), beta == 0
// not reading C, and each operand's extent checked against the device
// allocations. Each element sums over k in order in fp32; with
// CUBLAS_TF32_TENSOR_OP_MATH the inputs are first rounded to TF32 (10-bit
// mantissa, nearest, ties away), as tensor cores do. cublasGemmEx and
// cublasGemmStridedBatchedEx take bfloat16 A and B (exact in fp32, so the
// same sums) and write a bfloat16 C rounded once to nearest even from the
// fp32 result, under CUBLAS_COMPUTE_32F only; other types or compute types
// are CUBLAS_STATUS_NOT_SUPPORTED, and so is a bfloat16 C on a handle whose
// math mode lacks CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION (a GPU
// could then reduce in bfloat16).
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

// Operand element types (cudaDataType) and compute types the emulator takes.
enum { R_32F = 0, R_16BF = 14, COMPUTE_32F = 68, COMPUTE_32F_PEDANTIC = 69, NOT_SUPPORTED = 15, NO_REDUCED_REDUCTION = 16 };

static size_t type_size(int t) { return t == R_16BF ? 2 : 4; }

// bf16 is float32 -> bfloat16, round to nearest even, NaN kept quiet with its
// sign, as the GPU's conversion (and the project's ToBF16) does.
static unsigned short bf16(float x) {
	unsigned u;
	memcpy(&u, &x, 4);
	if ((u & 0x7fffffffu) > 0x7f800000u) return (unsigned short)((u >> 16) | 0x40u);
	u += 0x7fffu + ((u >> 16) & 1u);
	return (unsigned short)(u >> 16);
}

static float widen(unsigned short h) {
	unsigned u = (unsigned)h << 16;
	float x;
	memcpy(&x, &u, 4);
	return x;
}

static int check_operand(const char *name, const void *p, size_t elems, long long stride, int batch, int type) {
	if (elems == 0) return OK;
	size_t span = elems + (stride > 0 ? (size_t)stride * (batch - 1) : 0);
	char why[512];
	if (!cudaemu_check_range(p, span * type_size(type), why, sizeof why))
		return fail(EXECUTION_FAILED, std::string("operand ") + name + ": " + why);
	return OK;
}

struct Gemm {
	bool TA, TB, t32, readAB;
	int m, n, k;
	float al, be;
	const void *A;
	int at, lda;
	long long sa;
	const void *B;
	int bt, ldb;
	long long sb;
	void *C;
	int ct, ldc;
	long long sc;
	int batch;
};

// sgemm1 is one float32 product; each element sums over k in order.
static void sgemm1(const Gemm &g, const float *a, const float *bb, float *c, float be) {
	if (g.TA && !g.TB && g.readAB && !g.t32) {
		// Both operands run along k: dot products of contiguous
		// columns, summed in the same order as below.
		for (int j = 0; j < g.n; j++)
			for (int i = 0; i < g.m; i++) {
				const float *ai = a + (size_t)i * g.lda, *bj = bb + (size_t)j * g.ldb;
				float s = 0.0f;
				for (int l = 0; l < g.k; l++) s += ai[l] * bj[l];
				float *cij = c + i + (size_t)j * g.ldc;
				*cij = be == 0.0f ? g.al * s : g.al * s + be * *cij;
			}
		return;
	}
	std::vector<float> acc(g.m);
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
		for (int i = 0; i < g.m; i++) cj[i] = be == 0.0f ? g.al * acc[i] : g.al * acc[i] + be * cj[i];
	}
}

// as_float is a bfloat16 operand's span widened to float32 (exact), in the
// same layout; a float32 operand is used in place.
static const float *as_float(const void *p, int type, size_t n, std::vector<float> *buf) {
	if (type == R_32F) return (const float *)p;
	buf->resize(n);
	const unsigned short *h = (const unsigned short *)p;
	for (size_t i = 0; i < n; i++) (*buf)[i] = widen(h[i]);
	return buf->data();
}

// run_gemm computes a queued product: bfloat16 operands are read as the
// float32 values they are, the product accumulates in float32 as SGEMM's,
// and a bfloat16 C is written rounded once from the float32 result.
static void run_gemm(void *ctx) {
	Gemm g = *(Gemm *)ctx;
	delete (Gemm *)ctx;
	size_t na = extent(g.TA ? g.k : g.m, g.TA ? g.m : g.k, g.lda), nb = extent(g.TB ? g.n : g.k, g.TB ? g.k : g.n, g.ldb);
	size_t nc = extent(g.m, g.n, g.ldc);
	std::vector<float> wa, wb, wc;
	for (int b = 0; b < g.batch; b++) {
		const float *a = nullptr, *bb = nullptr;
		if (g.readAB) {
			a = as_float((const char *)g.A + g.sa * b * (long long)type_size(g.at), g.at, na, &wa);
			bb = as_float((const char *)g.B + g.sb * b * (long long)type_size(g.bt), g.bt, nb, &wb);
		}
		char *c = (char *)g.C + g.sc * b * (long long)type_size(g.ct);
		if (g.ct == R_32F) {
			sgemm1(g, a, bb, (float *)c, g.be);
			continue;
		}
		unsigned short *h = (unsigned short *)c;
		wc.assign(nc, 0.0f);
		if (g.be != 0.0f)
			for (size_t i = 0; i < nc; i++) wc[i] = widen(h[i]);
		sgemm1(g, a, bb, wc.data(), g.be);
		// Only the m rows of each column are C's; the rest of the span
		// (between columns, ldc > m) is left as it was.
		for (int j = 0; j < g.n; j++)
			for (int i = 0; i < g.m; i++) h[i + (size_t)j * g.ldc] = bf16(wc[i + (size_t)j * g.ldc]);
	}
}

// check_types accepts the combinations the emulator computes exactly as
// cuBLAS documents them for CUBLAS_COMPUTE_32F: float32 everywhere, or
// bfloat16 A and B with a bfloat16 or float32 C.
static int check_types(int at, int bt, int ct, int compute) {
	if (compute != COMPUTE_32F && compute != COMPUTE_32F_PEDANTIC)
		return fail(NOT_SUPPORTED, "compute type " + std::to_string(compute) + " (the emulator computes CUBLAS_COMPUTE_32F)");
	bool f = at == R_32F && bt == R_32F && ct == R_32F;
	bool h = at == R_16BF && bt == R_16BF && (ct == R_16BF || ct == R_32F);
	if (!f && !h)
		return fail(NOT_SUPPORTED, "types A " + std::to_string(at) + ", B " + std::to_string(bt) + ", C " + std::to_string(ct) +
						   " (CUBLAS_COMPUTE_32F takes A, B, C all CUDA_R_32F, or A and B CUDA_R_16BF with C CUDA_R_16BF or CUDA_R_32F)");
	return OK;
}

static int gemm(void *h, int ta, int tb, int m, int n, int k, const float *alpha, const void *A, int at, int lda, long long sa,
		const void *B, int bt, int ldb, long long sb, const float *beta, void *C, int ct, int ldc, long long sc, int batch,
		int compute) {
	if (!valid(h)) return fail(NOT_INITIALIZED, "not a live handle");
	if (int e = check_types(at, bt, ct, compute)) return e;
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
		if (int e = check_operand("A", A, extent(arows, TA ? m : k, lda), sa, batch, at)) return e;
		if (int e = check_operand("B", B, extent(brows, TB ? k : n, ldb), sb, batch, bt)) return e;
	}
	if (int e = check_operand("C", C, extent(m, n, ldc), sc, batch, ct)) return e;
	// A GPU may add split-K partial sums in C's type unless told not to; the
	// emulator always adds in float32, so it refuses what it cannot match.
	if (ct == R_16BF && !(((Handle *)h)->math & NO_REDUCED_REDUCTION))
		return fail(NOT_SUPPORTED, "a CUDA_R_16BF C without CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION in the math mode: "
					   "cuBLAS may then reduce in bfloat16, which the emulator does not compute");
	// Queued on the handle's stream, like the GPU's kernel; the scalars are read now.
	bool t32 = (((Handle *)h)->math & 0xf) == 3 && at == R_32F;
	Gemm *g = new Gemm{TA, TB, t32, readAB, m, n, k, al, be, A, at, lda, sa, B, bt, ldb, sb, C, ct, ldc, sc, batch};
	cudaemu_enqueue(((Handle *)h)->stream, run_gemm, g);
	return OK;
}

EMU_API int cublasSgemm_v2(void *h, int ta, int tb, int m, int n, int k, const float *alpha, const float *A, int lda,
			   const float *B, int ldb, const float *beta, float *C, int ldc) {
	return gemm(h, ta, tb, m, n, k, alpha, A, R_32F, lda, 0, B, R_32F, ldb, 0, beta, C, R_32F, ldc, 0, 1, COMPUTE_32F);
}

EMU_API int cublasSgemmStridedBatched(void *h, int ta, int tb, int m, int n, int k, const float *alpha, const float *A,
				      int lda, long long sa, const float *B, int ldb, long long sb, const float *beta,
				      float *C, int ldc, long long sc, int batch) {
	return gemm(h, ta, tb, m, n, k, alpha, A, R_32F, lda, sa, B, R_32F, ldb, sb, beta, C, R_32F, ldc, sc, batch, COMPUTE_32F);
}

// The algorithms the emulator accepts: CUBLAS_GEMM_DEFAULT (-1) and
// CUBLAS_GEMM_DEFAULT_TENSOR_OP (99); they compute alike.
static int check_algo(int algo) {
	if (algo != -1 && algo != 99) return fail(NOT_SUPPORTED, "algorithm " + std::to_string(algo) + " (the emulator takes CUBLAS_GEMM_DEFAULT)");
	return OK;
}

// cublasGemmEx and cublasGemmStridedBatchedEx with float32 scalars (host
// pointer mode, as the emulator's handles always are).
EMU_API int cublasGemmEx(void *h, int ta, int tb, int m, int n, int k, const void *alpha, const void *A, int at, int lda,
			 const void *B, int bt, int ldb, const void *beta, void *C, int ct, int ldc, int compute, int algo) {
	if (int e = check_algo(algo)) return e;
	return gemm(h, ta, tb, m, n, k, (const float *)alpha, A, at, lda, 0, B, bt, ldb, 0, (const float *)beta, C, ct, ldc, 0, 1, compute);
}

EMU_API int cublasGemmStridedBatchedEx(void *h, int ta, int tb, int m, int n, int k, const void *alpha, const void *A, int at,
				       int lda, long long sa, const void *B, int bt, int ldb, long long sb, const void *beta, void *C,
				       int ct, int ldc, long long sc, int batch, int compute, int algo) {
	if (int e = check_algo(algo)) return e;
	return gemm(h, ta, tb, m, n, k, (const float *)alpha, A, at, lda, sa, B, bt, ldb, sb, (const float *)beta, C, ct, ldc, sc,
		    batch, compute);
}
