/* Force-included before every kernel the emulated NVRTC compiles with the host
 * C++ compiler: CUDA's kernel dialect in plain C++. Each thread of a block is a
 * fiber of the runtime; this header only names the builtins. The builtins are
 * those the project's kernels may use (see CUDA_CONTRACT): index variables,
 * __syncthreads, __syncwarp, warp shuffles, static and dynamic shared memory,
 * warpSize, integer min/max, libm's float functions and a few bit casts. */
#ifndef CUDAEMU_KERNEL_H
#define CUDAEMU_KERNEL_H

#include "emu_abi.h"
#include <math.h>
#include <string.h>
#include <stddef.h>
#include <utility>

/* Header-free NVRTC has none of the C library's macros: a kernel that uses
 * them must fail here as it fails there (+inf is __int_as_float(0x7f800000)). */
#undef INFINITY
#undef NAN
#undef HUGE_VAL
#undef HUGE_VALF
#undef HUGE_VALL
#undef M_PI
#undef M_E
#undef M_SQRT2
#undef M_LN2
#undef M_2_SQRTPI
#undef M_SQRT1_2

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline __attribute__((always_inline))
#define __noinline__ __attribute__((noinline))
/* Blocks run one after another, so one static copy per kernel object is one
 * block's shared memory; every copy lies in the section emu_shared, so that
 * the runtime knows which addresses are shared memory. */
#define __shared__ static __attribute__((section("emu_shared")))
#define __emu_extern_shared__
#define __constant__ static
#define __restrict__ __restrict
#define __launch_bounds__(...)
#define __align__(n) __attribute__((aligned(n)))

extern "C" {
__attribute__((visibility("default"))) int __emu_abi = __EMU_ABI_VERSION;
__attribute__((visibility("default"))) struct __emu_thread *__emu_cur;
__attribute__((visibility("default"))) struct __emu_hooks __emu_hk;
/* Every `extern __shared__ T name[]` is linked to this buffer. */
__attribute__((visibility("default"), aligned(256))) char __emu_dsmem_buf[__EMU_DSMEM_BYTES];
/* The linker's bounds of the section emu_shared (null where a kernel object
 * has no static shared memory). */
extern char __start_emu_shared[] __attribute__((weak, visibility("hidden")));
extern char __stop_emu_shared[] __attribute__((weak, visibility("hidden")));
__attribute__((visibility("default"))) char *__emu_shared_bounds[2] = {__start_emu_shared, __stop_emu_shared};

/* The thread sanitizer's entry points, which the compiler calls before every
 * load and store of the kernels (-fsanitize=thread, no runtime linked): each
 * tells the emulated runtime, which checks shared and device memory. */
#define __EMU_NOSAN __attribute__((visibility("hidden"), no_sanitize("thread")))
#define __EMU_TSAN_RW(n)                                                                         \
	__EMU_NOSAN void __tsan_read##n(void *p) { __emu_hk.access(p, n, 0); }                    \
	__EMU_NOSAN void __tsan_write##n(void *p) { __emu_hk.access(p, n, 1); }                   \
	__EMU_NOSAN void __tsan_unaligned_read##n(void *p) { __emu_hk.access(p, n, 0); }          \
	__EMU_NOSAN void __tsan_unaligned_write##n(void *p) { __emu_hk.access(p, n, 1); }         \
	__EMU_NOSAN void __tsan_volatile_read##n(void *p) { __emu_hk.access(p, n, 0); }           \
	__EMU_NOSAN void __tsan_volatile_write##n(void *p) { __emu_hk.access(p, n, 1); }
__EMU_TSAN_RW(1)
__EMU_TSAN_RW(2)
__EMU_TSAN_RW(4)
__EMU_TSAN_RW(8)
__EMU_TSAN_RW(16)
#undef __EMU_TSAN_RW
__EMU_NOSAN void __tsan_read_range(void *p, unsigned long n) { __emu_hk.access(p, n, 0); }
__EMU_NOSAN void __tsan_write_range(void *p, unsigned long n) { __emu_hk.access(p, n, 1); }
__EMU_NOSAN void __tsan_init(void) {}
__EMU_NOSAN void __tsan_func_entry(void *pc) { (void)pc; }
__EMU_NOSAN void __tsan_func_exit(void) {}
__EMU_NOSAN void __tsan_vptr_update(void **p, void *v) { (void)p, (void)v; }
__EMU_NOSAN void __tsan_vptr_read(void **p) { (void)p; }
#undef __EMU_NOSAN
}

typedef struct __emu_uint3 uint3;
typedef struct __emu_uint3 dim3;
#define threadIdx (__emu_cur->threadIdx)
#define blockIdx (__emu_cur->blockIdx)
#define blockDim (__emu_cur->blockDim)
#define gridDim (__emu_cur->gridDim)
static const int warpSize = 32;

static inline void __syncthreads(void) { __emu_hk.syncthreads(); }
static inline void __syncwarp(unsigned mask = 0xffffffffu) { __emu_hk.warp(mask, 0, __EMU_SYNCWARP, 0, 32); }
static inline void __trap(void) { __emu_hk.trap("__trap()"); }

template <typename T> static inline T __emu_shfl(unsigned mask, T v, int kind, int arg, int width) {
	static_assert(sizeof(T) <= 8, "shuffles move at most 8 bytes");
	unsigned long long b = 0;
	memcpy(&b, &v, sizeof(T));
	b = __emu_hk.warp(mask, b, kind, arg, width);
	T r;
	memcpy(&r, &b, sizeof(T));
	return r;
}
template <typename T> static inline T __shfl_sync(unsigned mask, T v, int src, int width = 32) {
	return __emu_shfl(mask, v, __EMU_SHFL_IDX, src, width);
}
template <typename T> static inline T __shfl_up_sync(unsigned mask, T v, unsigned delta, int width = 32) {
	return __emu_shfl(mask, v, __EMU_SHFL_UP, (int)delta, width);
}
template <typename T> static inline T __shfl_down_sync(unsigned mask, T v, unsigned delta, int width = 32) {
	return __emu_shfl(mask, v, __EMU_SHFL_DOWN, (int)delta, width);
}
template <typename T> static inline T __shfl_xor_sync(unsigned mask, T v, int laneMask, int width = 32) {
	return __emu_shfl(mask, v, __EMU_SHFL_XOR, laneMask, width);
}

/* CUDA's integer (and float) min/max overloads. */
#define __EMU_MINMAX(R, A, B)                                                                \
	static inline R min(A a, B b) { return (R)a < (R)b ? (R)a : (R)b; }                  \
	static inline R max(A a, B b) { return (R)a > (R)b ? (R)a : (R)b; }
__EMU_MINMAX(int, int, int)
__EMU_MINMAX(unsigned, unsigned, unsigned)
__EMU_MINMAX(unsigned, int, unsigned)
__EMU_MINMAX(unsigned, unsigned, int)
__EMU_MINMAX(long long, long long, long long)
__EMU_MINMAX(unsigned long long, unsigned long long, unsigned long long)
__EMU_MINMAX(long, long, long)
__EMU_MINMAX(unsigned long, unsigned long, unsigned long)
#undef __EMU_MINMAX
static inline float min(float a, float b) { return fminf(a, b); }
static inline float max(float a, float b) { return fmaxf(a, b); }

static inline float rsqrtf(float x) { return 1.0f / sqrtf(x); }
static inline float __int_as_float(int i) { float f; memcpy(&f, &i, 4); return f; }
static inline int __float_as_int(float f) { int i; memcpy(&i, &f, 4); return i; }
static inline float __uint_as_float(unsigned i) { float f; memcpy(&f, &i, 4); return f; }
static inline unsigned __float_as_uint(float f) { unsigned i; memcpy(&i, &f, 4); return i; }
template <typename T> static inline T __ldg(const T *p) { return *p; }

/* Vector types with CUDA's alignment. */
struct __align__(8) float2 { float x, y; };
struct __align__(16) float4 { float x, y, z, w; };
struct __align__(8) int2 { int x, y; };
struct __align__(16) int4 { int x, y, z, w; };
static inline float2 make_float2(float x, float y) { return float2{x, y}; }
static inline float4 make_float4(float x, float y, float z, float w) { return float4{x, y, z, w}; }
static inline int2 make_int2(int x, int y) { return int2{x, y}; }
static inline int4 make_int4(int x, int y, int z, int w) { return int4{x, y, z, w}; }

/* Trampolines: cudaLaunchKernel's void **args to the kernel's parameters. */
template <typename... A, size_t... I>
static inline void __emu_call_impl(void (*f)(A...), void **a, std::index_sequence<I...>) {
	f(*static_cast<A *>(a[I])...);
}
template <typename... A> static inline void __emu_call(void (*f)(A...), void **a) {
	__emu_call_impl(f, a, std::index_sequence_for<A...>{});
}
template <typename... A> static constexpr int __emu_nparams(void (*)(A...)) { return (int)sizeof...(A); }
template <typename... A> struct __emu_sizes {
	static constexpr int v[sizeof...(A) + 1] = {(int)sizeof(A)..., 0};
};
template <typename... A> static constexpr const int *__emu_psizes(void (*)(A...)) { return __emu_sizes<A...>::v; }

#endif
