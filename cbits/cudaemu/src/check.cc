// The launch checks: racecheck and initcheck of shared memory per thread and
// barrier interval, and device memory shared between blocks of one launch.
//
// Shared memory has a shadow byte record: the interval and thread of the last
// write, the block that last wrote it at all, and the interval, reader (or
// several) and warp of this interval's reads. A barrier starts a new interval;
// a __syncwarp orders the accesses of its warp's lanes. Two threads touching a
// byte in one interval, one of them writing, unordered by a __syncwarp, is a
// race; a read of a byte no thread of the block wrote is uninitialised memory.
//
// Device memory has a shadow record per 2 bytes (kGrain: a bfloat16, so that
// blocks writing neighbouring bfloat16 values do not look as if they shared
// one): the launch, the block that wrote it and up to two blocks that read it. Blocks of one launch are not
// ordered on a GPU (there is no grid-wide barrier in the project's kernels),
// so one block reading or writing what another wrote, or writing what another
// read, is a race whatever order the emulator runs them in.
#include "check.h"
#include "blocks.h"

#include <algorithm>
#include <stdlib.h>
#include <string.h>

namespace {

struct ShByte {
	uint32_t wint = 0, rint = 0; // intervals of the last write, of the reads
	uint32_t wblk = 0;           // block serial of the last write
	uint32_t wsync = 0, rsync = 0;
	uint16_t wtid = 0, rtid = 0, rother = 0, rwarp = 0; // writer, first reader, another reader, readers' warp
	bool rmany = false;
};
const uint16_t kNoWarp = 0xffff;

struct GEnt {
	uint32_t launch, w, r, r2; // blocks as linear index + 1; 0: none
};

EmuCheckLaunch L;
std::vector<ShByte> sh;       // static shared bytes, then dynamic
std::vector<uint32_t> wsyncs; // per warp: __syncwarp count in this block
uint32_t interval, blk_serial, launch_id;
uint32_t blk1; // this block's linear index + 1
bool checking;
unsigned long long gen;
std::vector<EmuRegion> regions;

// pages caches which allocation, if any, holds a page: most accesses are to
// a few buffers, the stack and the kernel object. Allocations are separate
// mappings, so no page holds two.
struct PageHit {
	uintptr_t page = 0; // page number + 1; 0: empty
	const EmuRegion *r = nullptr;
};
PageHit pages[4096];

unsigned long long env_ull(const char *name, unsigned long long def) {
	const char *v = getenv(name);
	return v && *v ? strtoull(v, nullptr, 10) : def;
}

std::string thread_name(unsigned tid) {
	__emu_uint3 b = L.block;
	return emu_fmt("thread (%u,%u,%u)", tid % b.x, tid / b.x % b.y, tid / (b.x * b.y));
}

std::string block_name(uint32_t linear1) {
	unsigned long long i = linear1 - 1;
	__emu_uint3 g = L.grid;
	return emu_fmt("block (%llu,%llu,%llu)", i % g.x, i / g.x % g.y, i / ((unsigned long long)g.x * g.y));
}

// shared_name names a shared address: variable and byte offset where known.
std::string shared_name(uintptr_t a) {
	if (L.syms)
		for (const EmuSharedSym &s : *L.syms)
			if (a >= s.addr && a < s.addr + (s.size ? s.size : 1))
				return emu_fmt("%s+%zu (shared %p)", s.name.c_str(), (size_t)(a - s.addr), (void *)a);
	if (a >= (uintptr_t)L.dsmem) return emu_fmt("dynamic shared memory+%zu (%p)", (size_t)(a - (uintptr_t)L.dsmem), (void *)a);
	return emu_fmt("static shared memory+%zu (%p)", (size_t)(a - (uintptr_t)L.shared_lo), (void *)a);
}

bool ordered(uint16_t warp, uint32_t stamp, unsigned me_warp) { return warp == me_warp && stamp < wsyncs[me_warp]; }

// verbs are what the access does and what the earlier one did, by kind.
const char *const kVerbs[][3] = {{"read after write", "reads", "wrote"}, {"write after write", "writes", "wrote"}, {"write after read", "writes", "read"}};
enum { RAW, WAW, WAR };

bool shared_race(int kind, uintptr_t a, unsigned tid, unsigned other, std::string *why) {
	*why = emu_fmt("shared-memory race (%s) at %s in %s: %s %s it after %s %s it, with no __syncthreads between",
		       kVerbs[kind][0], shared_name(a).c_str(), block_name(blk1).c_str(), thread_name(tid).c_str(), kVerbs[kind][1],
		       thread_name(other).c_str(), kVerbs[kind][2]);
	return false;
}

bool shared_byte(ShByte &e, uintptr_t a, bool write, unsigned tid, std::string *why) {
	unsigned w = tid / 32;
	uint32_t now = wsyncs[w];
	if (!write) {
		if (e.wblk != blk_serial) {
			*why = emu_fmt("uninitialised shared memory: %s of %s reads %s, which no thread of the block has written "
				       "(a GPU gives whatever was there)",
				       thread_name(tid).c_str(), block_name(blk1).c_str(), shared_name(a).c_str());
			return false;
		}
		if (e.wint == interval && e.wtid != tid && !ordered(e.wtid / 32, e.wsync, w))
			return shared_race(RAW, a, tid, e.wtid, why);
		if (e.rint != interval) {
			e.rint = interval, e.rtid = (uint16_t)tid, e.rwarp = (uint16_t)w, e.rsync = now, e.rmany = false;
		} else {
			if (e.rtid != tid) e.rmany = true, e.rother = (uint16_t)tid;
			if (e.rwarp != w) e.rwarp = kNoWarp;
			e.rsync = std::max(e.rsync, now);
		}
		return true;
	}
	if (e.wint == interval && e.wtid != tid && !ordered(e.wtid / 32, e.wsync, w))
		return shared_race(WAW, a, tid, e.wtid, why);
	if (e.rint == interval && (e.rmany || e.rtid != tid) && !ordered(e.rwarp, e.rsync, w))
		return shared_race(WAR, a, tid, e.rtid != tid ? e.rtid : e.rother, why);
	e.wint = interval, e.wtid = (uint16_t)tid, e.wsync = now, e.wblk = blk_serial;
	return true;
}

bool shared_access(uintptr_t a, size_t n, bool write, unsigned tid, size_t base, std::string *why) {
	for (size_t i = 0; i < n; i++)
		if (!shared_byte(sh[base + i], a + i, write, tid, why)) return false;
	return true;
}

// page_region is the allocation with a byte in the page at first.
const EmuRegion *page_region(uintptr_t first) {
	uintptr_t last = first + 4095;
	auto it = std::upper_bound(regions.begin(), regions.end(), last, [](uintptr_t v, const EmuRegion &r) { return v < r.lo; });
	if (it == regions.begin()) return nullptr;
	--it;
	return it->lo + it->n > first ? &*it : nullptr;
}

const EmuRegion *region_of(uintptr_t a) {
	uintptr_t page = (a >> 12) + 1;
	PageHit &h = pages[page & 4095];
	if (h.page != page) h.page = page, h.r = page_region(a & ~(uintptr_t)4095);
	return h.r && a - h.r->lo < h.r->n ? h.r : nullptr;
}

bool device_race(int kind, const EmuRegion *r, uintptr_t a, uint32_t other, std::string *why) {
	*why = emu_fmt("device memory shared by blocks (%s) at %p (+%zu of the %zu-byte allocation at %p): %s %s it after %s %s it "
		       "in the same launch, and blocks are not ordered (no grid-wide barrier: split the kernel in two launches)",
		       kVerbs[kind][0], (void *)a, (size_t)(a - r->lo), r->n, (void *)r->lo, block_name(blk1).c_str(), kVerbs[kind][1],
		       block_name(other).c_str(), kVerbs[kind][2]);
	return false;
}

bool device_access(const EmuRegion *r, uintptr_t a, size_t n, bool write, std::string *why) {
	GEnt *g = (GEnt *)r->shadow;
	size_t first = (a - r->lo) / kGrain, last = (a - r->lo + n - 1) / kGrain;
	if (last >= (r->n + kGrain - 1) / kGrain) last = (r->n + kGrain - 1) / kGrain - 1;
	for (size_t i = first; i <= last; i++) {
		GEnt &e = g[i];
		if (e.launch != launch_id) e = GEnt{launch_id, 0, 0, 0};
		if (e.w && e.w != blk1) return device_race(write ? WAW : RAW, r, a, e.w, why);
		if (!write) {
			if (!e.r) e.r = blk1;
			else if (e.r != blk1) e.r2 = blk1;
			continue;
		}
		if (e.r && e.r != blk1) return device_race(WAR, r, a, e.r, why);
		if (e.r2 && e.r2 != blk1) return device_race(WAR, r, a, e.r2, why);
		e.w = blk1;
	}
	return true;
}

} // namespace

bool check_enabled(void) {
	static bool on = env_ull("CUDAEMU_CHECK", 1) != 0;
	return on;
}

unsigned long long check_block_limit(void) {
	static unsigned long long n = env_ull("CUDAEMU_CHECK_BLOCKS", 256);
	return n;
}

void check_launch(const EmuCheckLaunch &l) {
	L = l;
	size_t bytes = (size_t)(l.shared_hi - l.shared_lo) + l.smem;
	if (sh.size() < bytes) sh.resize(bytes);
	wsyncs.assign((l.block.x * l.block.y * l.block.z + 31) / 32, 0);
	if (++launch_id == 0) launch_id = 1;
	if (emu_alloc_snapshot(&gen, &regions))
		for (PageHit &h : pages) h = PageHit{};
}

void check_block(unsigned long long linear, bool checked) {
	if (L.shared_hi > L.shared_lo) memset(L.shared_lo, 0xff, (size_t)(L.shared_hi - L.shared_lo));
	if (L.smem) memset(L.dsmem, 0xff, L.smem);
	checking = checked && check_enabled();
	blk1 = (uint32_t)(linear + 1);
	if (++blk_serial == 0) blk_serial = 1;
	check_barrier();
	std::fill(wsyncs.begin(), wsyncs.end(), 0);
}

void check_barrier(void) {
	if (++interval == 0) interval = 1;
}

void check_syncwarp(unsigned warp) {
	if (warp < wsyncs.size()) wsyncs[warp]++;
}

bool check_access(const void *p, size_t n, bool write, unsigned tid, std::string *why) {
	if (!checking || n == 0) return true;
	uintptr_t a = (uintptr_t)p, slo = (uintptr_t)L.shared_lo, slen = (uintptr_t)L.shared_hi - slo;
	if (a - slo < slen) return shared_access(a, n, write, tid, a - slo, why);
	uintptr_t dlo = (uintptr_t)L.dsmem;
	if (a - dlo < __EMU_DSMEM_BYTES) {
		if (a - dlo + n > L.smem) {
			*why = emu_fmt("%s of %s %s %zu bytes at dynamic shared memory+%zu, past the %zu bytes the launch asked for",
				       thread_name(tid).c_str(), block_name(blk1).c_str(), write ? "writes" : "reads", n,
				       (size_t)(a - dlo), L.smem);
			return false;
		}
		return shared_access(a, n, write, tid, slen + (a - dlo), why);
	}
	const EmuRegion *r = region_of(a);
	return r ? device_access(r, a, n, write, why) : true;
}
