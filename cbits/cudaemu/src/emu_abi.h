/* The interface between the emulated runtime (libcudart.so.13 of cudaemu) and
 * the kernels the emulated NVRTC builds. A kernel shared object exports:
 *   __emu_abi      int, __EMU_ABI_VERSION
 *   __emu_cur      struct __emu_thread *: the running thread; the runtime sets it
 *                  before it switches to a thread
 *   __emu_hk       struct __emu_hooks: the runtime fills it when it loads the object
 *   __emu_kernels  struct __emu_kentry[], name -> trampoline, ended by {0, 0}
 *   __emu_shared_bounds  char *[2]: the object's static shared memory (the
 *                  section emu_shared every __shared__ variable lies in)
 *   __emu_dsmem_buf the object's dynamic shared memory
 * Kernels are compiled with the host compiler's thread-sanitizer
 * instrumentation, whose entry points (__tsan_read4, ...) the header defines
 * as calls of __emu_hk.access: the runtime sees every load and store.
 * A trampoline takes cudaLaunchKernel's void **args and calls the kernel with
 * them converted to its parameter types. cbits ends the args array with a
 * null pointer (which CUDA ignores), so the runtime can check that a launch
 * passes as many arguments as the kernel has parameters. */
#ifndef CUDAEMU_ABI_H
#define CUDAEMU_ABI_H

#define __EMU_ABI_VERSION 4
/* Dynamic shared memory every kernel object reserves: Hopper's opt-in maximum. */
#define __EMU_DSMEM_BYTES (227 * 1024)

#ifdef __cplusplus
extern "C" {
#endif

struct __emu_uint3 {
	unsigned x, y, z;
};

struct __emu_thread {
	struct __emu_uint3 threadIdx, blockIdx, blockDim, gridDim;
};

enum { __EMU_SHFL_IDX = 0, __EMU_SHFL_UP = 1, __EMU_SHFL_DOWN = 2, __EMU_SHFL_XOR = 3, __EMU_SYNCWARP = 4 };

struct __emu_hooks {
	void (*syncthreads)(void);
	/* warp: a shuffle of kind with arg (lane, delta or mask) and width, or a
	 * __syncwarp; returns the value read (v itself for __syncwarp). */
	unsigned long long (*warp)(unsigned mask, unsigned long long v, int kind, int arg, int width);
	void (*trap)(const char *why);
	/* access: the running thread read (write 0) or wrote n bytes at p. */
	void (*access)(const void *p, unsigned long n, int write);
};

typedef void (*__emu_tramp_fn)(void **args);

struct __emu_kentry {
	const char *name;
	__emu_tramp_fn fn;
	int nparams;
	const int *psizes; /* sizeof each parameter: a launch copies that many bytes of each */
};

#ifdef __cplusplus
}
#endif
#endif
