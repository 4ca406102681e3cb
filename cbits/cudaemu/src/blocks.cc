// A block's threads are fibers, each with its own stack, switched only where
// CUDA threads can wait for each other: __syncthreads, __syncwarp and the warp
// shuffles. A thread that reaches a barrier yields, so its block-mates run up
// to the barrier too; the last to arrive releases the others. A warp operation
// completes when every live lane its mask names has arrived, and every lane
// then reads what its source lane deposited, so lanes never see a value from
// a later shuffle. Threads that have returned no longer count for barriers.
// A pass in which no thread can run is a deadlock (a __syncthreads that not
// every thread reaches): the launch fails with counts of who waits where.
//
// A GPU runs blocks in no set order and a block's warps in no set order, so
// neither does the emulator: blocks run in a seeded random order, and a
// block's warps in a seeded random order, each warp's lanes up or down, that
// reverses at every pass (so the threads reach each barrier in more than one
// order). Every load and
// store goes through check.cc, which fails the launch on a shared-memory
// race, an uninitialised shared read or device memory two blocks share; the
// failure names the seed (CUDAEMU_SEED) that reproduces it.
//
// Fibers start with makecontext/setcontext once and then switch with
// _setjmp/_longjmp, which costs no system call; a fiber whose kernel returns
// waits, on its own stack, to run the next block. This file must be built
// without _FORTIFY_SOURCE, whose longjmp check refuses a jump to another stack.
#include "blocks.h"
#include "check.h"
#include "order.h"

#include <setjmp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>
#include <vector>

namespace {

enum State { RUN, BAR, WARP, DONE };

struct Fiber {
	__emu_thread view;
	jmp_buf jb;
	ucontext_t uc;
	char *stack = nullptr;
	size_t stacklen = 0;
	bool started = false;
	State state = DONE;
	unsigned tid = 0, lane = 0, warp = 0;
	int kind = 0;                      // the warp operation
	unsigned mask = 0;                 // the warp operation's member mask
	unsigned long long in = 0, out = 0; // value deposited, value read
	int src = -1;                      // lane read from; -1: its own value
};

struct Warp {
	unsigned live = 0;    // lanes present and not returned
	unsigned arrived = 0; // lanes waiting at a warp operation
};

std::vector<Fiber *> pool;
jmp_buf sched;
Fiber *cur;
__emu_thread **cur_slot;
__emu_tramp_fn tramp;
void **targs;
unsigned nthreads, live, bar_arrived;
std::vector<Warp> warps;
std::vector<unsigned> order; // the block's thread order
bool failed;
std::string fail_why;
unsigned long long launches;

size_t stack_bytes(void) {
	const char *v = getenv("CUDAEMU_STACK_KB");
	size_t kb = v && *v ? strtoull(v, nullptr, 10) : 256;
	return (kb < 16 ? 16 : kb) * 1024;
}

void switch_out(Fiber *f) {
	if (!_setjmp(f->jb)) _longjmp(sched, 1);
}

void release_barrier_if_all(void) {
	if (bar_arrived == 0 || bar_arrived != live) return;
	for (unsigned i = 0; i < nthreads; i++)
		if (pool[i]->state == BAR) pool[i]->state = RUN;
	bar_arrived = 0;
	check_barrier();
}

// release_warp completes the warp operation of the lanes in mask once all of
// them that are live have arrived.
bool release_warp(unsigned wi, unsigned mask) {
	Warp &w = warps[wi];
	unsigned need = w.live & mask;
	if (need == 0 || (w.arrived & need) != need) return false;
	Fiber **lanes = &pool[wi * 32];
	bool syncwarp = true;
	for (unsigned l = 0; l < 32; l++)
		if (need >> l & 1) syncwarp = syncwarp && lanes[l]->kind == __EMU_SYNCWARP;
	if (syncwarp) check_syncwarp(wi); // CUDA orders memory at __syncwarp, not at shuffles
	for (unsigned l = 0; l < 32; l++) {
		if (!(need >> l & 1)) continue;
		Fiber *g = lanes[l];
		int s = g->src;
		g->out = (s >= 0 && s < 32 && (need >> s & 1)) ? lanes[s]->in : g->in;
		g->state = RUN;
	}
	w.arrived &= ~need;
	return true;
}

// src_lane is the lane a shuffle reads, or -1 for the caller's own value
// (CUDA's rules for lanes outside the caller's width-sized segment).
int src_lane(int kind, unsigned lane, int arg, int width) {
	if (width <= 0 || width > 32 || (width & (width - 1))) width = 32;
	unsigned w = (unsigned)width, base = lane & ~(w - 1), off = lane & (w - 1);
	switch (kind) {
	case __EMU_SHFL_IDX:
		return (int)(base + ((unsigned)arg & (w - 1)));
	case __EMU_SHFL_UP:
		return (unsigned)arg > off ? -1 : (int)(lane - (unsigned)arg);
	case __EMU_SHFL_DOWN:
		return off + (unsigned)arg >= w ? -1 : (int)(lane + (unsigned)arg);
	case __EMU_SHFL_XOR: {
		unsigned s = lane ^ (unsigned)arg;
		return (s >= 32 || s / w > lane / w) ? -1 : (int)s;
	}
	}
	return -1;
}

void hk_syncthreads(void) {
	Fiber *f = cur;
	f->state = BAR;
	bar_arrived++;
	if (bar_arrived == live) release_barrier_if_all();
	else switch_out(f);
}

unsigned long long hk_warp(unsigned mask, unsigned long long v, int kind, int arg, int width) {
	Fiber *f = cur;
	f->in = v;
	f->kind = kind;
	f->src = kind == __EMU_SYNCWARP ? -1 : src_lane(kind, f->lane, arg, width);
	f->mask = mask | (1u << f->lane);
	f->state = WARP;
	warps[f->warp].arrived |= 1u << f->lane;
	if (!release_warp(f->warp, f->mask)) switch_out(f);
	return f->out;
}

void fail_thread(const std::string &why) {
	failed = true;
	fail_why = why;
	cur->state = DONE;
	switch_out(cur);
}

void hk_trap(const char *why) { fail_thread(std::string(why) + emu_where(&cur->view)); }

void hk_access(const void *p, unsigned long n, int write) {
	static std::string why; // not built per access: there are many
	if (!check_access(p, n, write != 0, cur->tid, &why)) fail_thread(why);
}

// thread_exit retires the running thread; others may have waited only for it.
void thread_exit(void) {
	Fiber *f = cur;
	f->state = DONE;
	live--;
	Warp &w = warps[f->warp];
	w.live &= ~(1u << f->lane);
	w.arrived &= ~(1u << f->lane);
	release_barrier_if_all();
	for (unsigned l = 0; l < 32 && w.arrived; l++)
		if (w.arrived >> l & 1) release_warp(f->warp, pool[f->warp * 32 + l]->mask);
	switch_out(f);
}

void fiber_main(void) {
	for (;;) {
		tramp(targs);
		thread_exit();
	}
}

bool grow_pool(unsigned n, std::string *err) {
	size_t ps = (size_t)sysconf(_SC_PAGESIZE), sb = stack_bytes();
	while (pool.size() < n) {
		Fiber *f = new Fiber;
		f->stacklen = sb + ps;
		void *m = mmap(nullptr, f->stacklen, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0);
		if (m == MAP_FAILED) {
			delete f;
			*err = "cannot map a thread stack";
			return false;
		}
		mprotect(m, ps, PROT_NONE); // guard page: an overflowing thread faults
		f->stack = (char *)m;
		pool.push_back(f);
	}
	return true;
}

// reset_pool forgets fibers stopped inside a kernel after a failed block.
void reset_pool(void) {
	for (Fiber *f : pool) f->started = false;
}

void start_fiber(Fiber *f) {
	getcontext(&f->uc);
	size_t ps = (size_t)sysconf(_SC_PAGESIZE);
	f->uc.uc_stack.ss_sp = f->stack + ps;
	f->uc.uc_stack.ss_size = f->stacklen - ps;
	f->uc.uc_link = nullptr;
	makecontext(&f->uc, fiber_main, 0);
	setcontext(&f->uc);
}

std::string deadlock_report(void) {
	unsigned bar = 0, wp = 0;
	for (unsigned i = 0; i < nthreads; i++) {
		if (pool[i]->state == BAR) bar++;
		if (pool[i]->state == WARP) wp++;
	}
	return emu_fmt("deadlock in block (%u,%u,%u): %u of %u threads wait at __syncthreads, %u at a warp operation, %u have returned "
		       "(a barrier inside a branch not every thread takes?)",
		       pool[0]->view.blockIdx.x, pool[0]->view.blockIdx.y, pool[0]->view.blockIdx.z, bar, nthreads, wp, nthreads - live);
}

// run_thread runs fiber f until it waits or returns; false if it failed.
bool run_thread(Fiber *f) {
	cur = f;
	*cur_slot = &f->view;
	if (!_setjmp(sched)) {
		if (!f->started) {
			f->started = true;
			start_fiber(f);
		}
		_longjmp(f->jb, 1);
	}
	return !failed;
}

void start_block(__emu_uint3 bid) {
	for (unsigned i = 0; i < nthreads; i++) {
		Fiber *f = pool[i];
		__emu_uint3 bd = f->view.blockDim;
		f->view.blockIdx = bid;
		f->view.threadIdx = __emu_uint3{i % bd.x, i / bd.x % bd.y, i / (bd.x * bd.y)};
		f->state = RUN;
		f->tid = i;
		f->lane = i % 32;
		f->warp = i / 32;
	}
	for (unsigned w = 0; w < warps.size(); w++) {
		unsigned lanes = nthreads - w * 32 >= 32 ? 32 : nthreads - w * 32;
		warps[w].live = lanes == 32 ? 0xffffffffu : (1u << lanes) - 1;
		warps[w].arrived = 0;
	}
	live = nthreads;
	bar_arrived = 0;
}

// run_block runs one block, its threads in the order order holds, reversed
// at every other pass.
bool run_block(__emu_uint3 bid, std::string *err) {
	start_block(bid);
	for (unsigned pass = 0;; pass++) {
		bool progress = false;
		for (unsigned k = 0; k < nthreads; k++) {
			Fiber *f = pool[order[pass & 1 ? nthreads - 1 - k : k]];
			if (f->state != RUN) continue;
			progress = true;
			if (!run_thread(f)) {
				*err = fail_why;
				return false;
			}
		}
		if (live == 0) return true;
		if (!progress) {
			*err = deadlock_report();
			return false;
		}
	}
}

} // namespace

std::string emu_where(const __emu_thread *t) {
	return emu_fmt(" in block (%u,%u,%u) thread (%u,%u,%u)", t->blockIdx.x, t->blockIdx.y, t->blockIdx.z, t->threadIdx.x,
		       t->threadIdx.y, t->threadIdx.z);
}

void emu_install_hooks(__emu_hooks *hk) {
	hk->syncthreads = hk_syncthreads;
	hk->warp = hk_warp;
	hk->trap = hk_trap;
	hk->access = hk_access;
}

bool emu_run_grid(const EmuGrid &g, std::string *err) {
	__emu_uint3 grid = g.check.grid, block = g.check.block;
	nthreads = block.x * block.y * block.z;
	if (!grow_pool(nthreads, err)) return false;
	tramp = g.fn;
	targs = g.args;
	cur_slot = g.cur;
	failed = false;
	warps.assign((nthreads + 31) / 32, Warp{});
	for (unsigned i = 0; i < nthreads; i++) {
		pool[i]->view.blockDim = block;
		pool[i]->view.gridDim = grid;
	}
	unsigned long long launch = ++launches;
	Rng rng{emu_seed() ^ (launch * 0xd1b54a32d192ed03ull)};
	unsigned long long nb = (unsigned long long)grid.x * grid.y * grid.z, limit = check_block_limit();
	BlockOrder bo(nb, &rng);
	check_launch(g.check);
	for (unsigned long long k = 0; k < nb; k++) {
		unsigned long long i = bo.at(k);
		__emu_uint3 bid{(unsigned)(i % grid.x), (unsigned)(i / grid.x % grid.y), (unsigned)(i / ((unsigned long long)grid.x * grid.y))};
		warp_order(&order, nthreads, &rng);
		check_block(i, k < limit && nb < (1ull << 32));
		if (!run_block(bid, err)) {
			reset_pool();
			*err += emu_fmt(" [thread and block orders of CUDAEMU_SEED=%llu, launch %llu of the process]",
					(unsigned long long)emu_seed(), launch);
			return false;
		}
	}
	return true;
}
