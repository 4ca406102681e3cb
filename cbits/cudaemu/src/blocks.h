/* The block scheduler: a grid's blocks one after another in a seeded order,
 * each block's threads as cooperative fibers. */
#ifndef CUDAEMU_BLOCKS_H
#define CUDAEMU_BLOCKS_H

#include "emu_abi.h"
#include "check.h"
#include <string>

std::string emu_fmt(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* emu_where names a thread: " in block (x,y,z) thread (x,y,z)". */
std::string emu_where(const struct __emu_thread *t);

/* emu_install_hooks fills a kernel object's hook table. */
void emu_install_hooks(struct __emu_hooks *hk);
struct EmuGrid {
	__emu_tramp_fn fn;
	struct __emu_thread **cur; /* the object's running-thread pointer */
	void **args;
	EmuCheckLaunch check; /* the grid, the block and what the checks need */
};
/* emu_run_grid runs a launch, setting *cur to the running thread; false, with
 * the reason in *err, when a block deadlocks, traps or fails a check. */
bool emu_run_grid(const EmuGrid &g, std::string *err);

#endif
