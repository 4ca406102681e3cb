/* The checks a launch runs while its threads execute, as compute-sanitizer's
 * racecheck and initcheck would on a GPU: every load and store of a kernel
 * (thread-sanitizer instrumentation) comes here. */
#ifndef CUDAEMU_CHECK_H
#define CUDAEMU_CHECK_H

#include "emu_abi.h"
#include <stddef.h>
#include <stdint.h>
#include <string>
#include <vector>

/* A device allocation and its shadow (emu_shadow_bytes of it), which
 * cudaMalloc maps beside it. */
struct EmuRegion {
	uintptr_t lo;
	size_t n;
	void *shadow;
};
size_t emu_shadow_bytes(size_t n);
/* kGrain is the bytes of device memory one shadow record covers. */
static const size_t kGrain = 2;
/* emu_alloc_snapshot fills out with the device allocations, sorted by
 * address, unless they are the same as when *gen was taken (false then). */
bool emu_alloc_snapshot(unsigned long long *gen, std::vector<EmuRegion> *out);

/* A named static __shared__ variable of a kernel object. */
struct EmuSharedSym {
	uintptr_t addr;
	size_t size;
	std::string name;
};

struct EmuCheckLaunch {
	const char *kernel;
	char *shared_lo, *shared_hi; /* the object's static shared memory */
	char *dsmem;                 /* its dynamic shared memory, smem bytes of it for this launch */
	size_t smem;
	const std::vector<EmuSharedSym> *syms;
	__emu_uint3 grid, block;
};

/* check_enabled: CUDAEMU_CHECK is not 0. check_block_limit: how many blocks
 * of a launch are checked (CUDAEMU_CHECK_BLOCKS; the first that run, which
 * are a random sample since blocks run in shuffled order). */
bool check_enabled(void);
unsigned long long check_block_limit(void);

/* check_launch starts a launch; check_block a block (its linear index, and
 * whether its accesses are checked), filling its shared memory with 0xff
 * bytes (NaN as float and double); check_barrier a __syncthreads interval;
 * check_syncwarp orders the accesses of a warp's lanes. */
void check_launch(const EmuCheckLaunch &l);
void check_block(unsigned long long linear, bool checked);
void check_barrier(void);
void check_syncwarp(unsigned warp);
/* check_access records an access of thread tid (linear in its block); false,
 * with why, on a race, an uninitialised or out-of-bounds shared read. */
bool check_access(const void *p, size_t n, bool write, unsigned tid, std::string *why);

#endif
