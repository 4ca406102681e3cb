// The emulated CUDA runtime: one device (compute capability 9.0) whose memory
// is host memory. Work on every stream runs when it is queued, so streams are
// in order and events are done when recorded. Device allocations are separate
// mappings between guard pages, so a kernel that runs past a buffer faults at
// once instead of corrupting a neighbour, and copies and memsets check that
// their device side lies inside one allocation. A new allocation holds 0xff
// bytes (NaN as float and double, -1 as an integer), not zeros: a GPU's
// cudaMalloc gives whatever memory held, and code that reads before it writes
// shows here.
#include "emu_internal.h"
#include "check.h"

#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <vector>
#include <mutex>
#include <set>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

std::string emu_fmt(const char *fmt, ...) {
	char buf[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	return buf;
}

static std::mutex mu; // guards everything below
static thread_local int last_error;
static thread_local int detail_err;
static thread_local std::string detail;
static int sticky;
static std::string sticky_detail;

int emu_fail(int err, const std::string &d) {
	last_error = err;
	detail_err = err;
	detail = d;
	return err;
}

int emu_sticky(void) {
	std::lock_guard<std::mutex> g(mu);
	if (sticky) {
		last_error = sticky;
		detail_err = sticky;
		detail = sticky_detail;
	}
	return sticky;
}

void emu_set_sticky(int err, const std::string &d) {
	std::lock_guard<std::mutex> g(mu);
	if (!sticky) {
		sticky = err;
		sticky_detail = d;
	}
	emu_fail(err, d);
}

int emu_device_error(void) {
	const char *v = getenv("CUDAEMU_NO_DRIVER");
	if (v && *v && strcmp(v, "0") != 0) return cudaErrorInsufficientDriver;
	v = getenv("CUDAEMU_DEVICE_COUNT");
	if (v && strcmp(v, "0") == 0) return cudaErrorNoDevice;
	return 0;
}

#define CHECK_DEVICE()                                                                         \
	do {                                                                                   \
		if (int e_ = emu_device_error()) return emu_fail(e_, "");                     \
		if (int s_ = emu_sticky()) return s_;                                          \
	} while (0)

struct ErrName {
	int code;
	const char *name, *text;
};
static const ErrName err_names[] = {
	{0, "cudaSuccess", "no error"},
	{1, "cudaErrorInvalidValue", "invalid argument"},
	{2, "cudaErrorMemoryAllocation", "out of memory"},
	{3, "cudaErrorInitializationError", "initialization error"},
	{9, "cudaErrorInvalidConfiguration", "invalid configuration argument"},
	{21, "cudaErrorInvalidMemcpyDirection", "invalid copy direction for memcpy"},
	{35, "cudaErrorInsufficientDriver", "CUDA driver version is insufficient for CUDA runtime version"},
	{98, "cudaErrorInvalidDeviceFunction", "invalid device function"},
	{100, "cudaErrorNoDevice", "no CUDA-capable device is detected"},
	{101, "cudaErrorInvalidDevice", "invalid device ordinal"},
	{200, "cudaErrorInvalidKernelImage", "device kernel image is invalid"},
	{400, "cudaErrorInvalidResourceHandle", "invalid resource handle"},
	{500, "cudaErrorSymbolNotFound", "named symbol not found"},
	{600, "cudaErrorNotReady", "device not ready"},
	{700, "cudaErrorIllegalAddress", "an illegal memory access was encountered"},
	{719, "cudaErrorLaunchFailure", "unspecified launch failure"},
};

static const ErrName *find_err(int e) {
	for (const ErrName &n : err_names)
		if (n.code == e) return &n;
	return nullptr;
}

EMU_API const char *cudaGetErrorName(int e) {
	const ErrName *n = find_err(e);
	return n ? n->name : "cudaErrorUnknown";
}

// cudaGetErrorString adds, for the last failure on this thread, what the
// emulator saw ("out of memory (cudaemu: 2 GiB requested, 1 GiB free)"). A
// failed kernel's error is the context's, not a thread's: its report is added
// on any thread, so that it is not lost when a caller asks from another thread
// than the one whose synchronisation found it.
EMU_API const char *cudaGetErrorString(int e) {
	const ErrName *n = find_err(e);
	static thread_local std::string s;
	s = n ? n->text : "unknown error";
	std::string d = e == detail_err ? detail : "";
	if (d.empty()) {
		std::lock_guard<std::mutex> g(mu);
		if (e == sticky) d = sticky_detail;
	}
	if (!d.empty()) s += " (cudaemu: " + d + ")";
	return s.c_str();
}

EMU_API int cudaGetLastError(void) {
	int e = last_error;
	last_error = sticky;
	return e;
}

EMU_API int cudaDriverGetVersion(int *v) {
	if (!v) return emu_fail(cudaErrorInvalidValue, "null pointer");
	*v = emu_device_error() == cudaErrorInsufficientDriver ? 0 : 13000;
	return 0;
}

EMU_API int cudaRuntimeGetVersion(int *v) {
	if (!v) return emu_fail(cudaErrorInvalidValue, "null pointer");
	*v = 13000;
	return 0;
}

EMU_API int cudaGetDeviceCount(int *n) {
	if (!n) return emu_fail(cudaErrorInvalidValue, "null pointer");
	*n = 0;
	if (int e = emu_device_error()) return emu_fail(e, "");
	*n = 1;
	return 0;
}

EMU_API int cudaSetDevice(int d) {
	CHECK_DEVICE();
	if (d != 0) return emu_fail(cudaErrorInvalidDevice, emu_fmt("device %d: the emulator has one device, 0", d));
	return 0;
}

EMU_API int cudaDeviceGetAttribute(int *v, int attr, int dev) {
	CHECK_DEVICE();
	if (!v) return emu_fail(cudaErrorInvalidValue, "null pointer");
	if (dev != 0) return emu_fail(cudaErrorInvalidDevice, emu_fmt("device %d", dev));
	switch (attr) {
	case 1: *v = 1024; return 0;      // MaxThreadsPerBlock
	case 2: *v = 1024; return 0;      // MaxBlockDimX
	case 3: *v = 1024; return 0;      // MaxBlockDimY
	case 4: *v = 64; return 0;        // MaxBlockDimZ
	case 5: *v = 2147483647; return 0; // MaxGridDimX
	case 6: case 7: *v = 65535; return 0;
	case 8: *v = 48 * 1024; return 0; // MaxSharedMemoryPerBlock
	case 10: *v = 32; return 0;       // WarpSize
	case 16: *v = 132; return 0;      // MultiProcessorCount
	case 20: *v = 0; return 0;        // ComputeMode: default (cudaComputeModeDefault)
	case 75: *v = 9; return 0;        // ComputeCapabilityMajor
	case 76: *v = 0; return 0;        // ComputeCapabilityMinor
	case 97: *v = 227 * 1024; return 0; // MaxSharedMemoryPerBlockOptin
	}
	return emu_fail(cudaErrorInvalidValue, emu_fmt("attribute %d is not emulated", attr));
}

// ---- memory ----

static size_t page_size(void) { return (size_t)sysconf(_SC_PAGESIZE); }

struct Alloc {
	size_t bytes;  // asked for
	char *map;     // the mapping, guard pages included
	size_t maplen;
	void *shadow;  // the launch checks' record of it (check.h)
};
static std::map<uintptr_t, Alloc> allocs; // device pointer -> allocation
static size_t allocated;
static std::map<uintptr_t, size_t> host_allocs; // pinned host memory
static unsigned long long alloc_gen = 1;          // changes with allocs

size_t emu_shadow_bytes(size_t n) { return (n + kGrain - 1) / kGrain * 16; }

bool emu_alloc_snapshot(unsigned long long *gen, std::vector<EmuRegion> *out) {
	std::lock_guard<std::mutex> g(mu);
	if (*gen == alloc_gen) return false;
	out->clear();
	for (auto &a : allocs) out->push_back(EmuRegion{a.first, a.second.bytes, a.second.shadow});
	*gen = alloc_gen;
	return true;
}

static size_t total_memory(void) {
	const char *v = getenv("CUDAEMU_MEMORY_BYTES");
	if (v && *v) return strtoull(v, nullptr, 10);
	return (size_t)8 << 30;
}

EMU_API int cudaMemGetInfo(size_t *free_b, size_t *total_b) {
	CHECK_DEVICE();
	std::lock_guard<std::mutex> g(mu);
	size_t t = total_memory();
	if (free_b) *free_b = allocated < t ? t - allocated : 0;
	if (total_b) *total_b = t;
	return 0;
}

// cudaMalloc places the buffer, rounded up to 256 bytes as on a GPU, so that
// it ends at a guard page; another guard page precedes it.
EMU_API int cudaMalloc(void **p, size_t n) {
	CHECK_DEVICE();
	if (!p) return emu_fail(cudaErrorInvalidValue, "null pointer");
	*p = nullptr;
	if (n == 0) return 0;
	std::lock_guard<std::mutex> g(mu);
	size_t t = total_memory();
	if (n > t || allocated > t - n)
		return emu_fail(cudaErrorMemoryAllocation, emu_fmt("%zu bytes requested, %zu of %zu free", n, t - allocated, t));
	size_t ps = page_size(), r = (n + 255) & ~(size_t)255;
	size_t body = (r + ps - 1) / ps * ps, len = body + 2 * ps;
	void *m = mmap(nullptr, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (m == MAP_FAILED) return emu_fail(cudaErrorMemoryAllocation, emu_fmt("mmap of %zu bytes failed", len));
	char *base = (char *)m;
	if (mprotect(base + ps, body, PROT_READ | PROT_WRITE) != 0) {
		munmap(m, len);
		return emu_fail(cudaErrorMemoryAllocation, "mprotect failed");
	}
	// The shadow is address space only until a kernel touches the buffer.
	void *shadow = mmap(nullptr, emu_shadow_bytes(n), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (shadow == MAP_FAILED) {
		munmap(m, len);
		return emu_fail(cudaErrorMemoryAllocation, emu_fmt("mmap of the %zu-byte shadow failed", emu_shadow_bytes(n)));
	}
	char *ptr = base + ps + body - r;
	memset(ptr, 0xff, n);
	allocs[(uintptr_t)ptr] = Alloc{n, base, len, shadow};
	alloc_gen++;
	allocated += n;
	*p = ptr;
	return 0;
}

EMU_API int cudaFree(void *p) {
	CHECK_DEVICE();
	if (!p) return 0;
	emu_drain_all(); // as CUDA, freeing waits for the device
	std::lock_guard<std::mutex> g(mu);
	auto it = allocs.find((uintptr_t)p);
	if (it == allocs.end()) return emu_fail(cudaErrorInvalidValue, emu_fmt("%p is not a device allocation (freed twice?)", p));
	munmap(it->second.map, it->second.maplen);
	munmap(it->second.shadow, emu_shadow_bytes(it->second.bytes));
	alloc_gen++;
	allocated -= it->second.bytes;
	allocs.erase(it);
	return 0;
}

bool emu_check_range(const void *p, size_t n, std::string *why) {
	std::lock_guard<std::mutex> g(mu);
	uintptr_t a = (uintptr_t)p;
	auto it = allocs.upper_bound(a);
	if (it == allocs.begin()) {
		*why = emu_fmt("%p is not in any device allocation", p);
		return false;
	}
	--it;
	uintptr_t lo = it->first, hi = lo + it->second.bytes;
	if (a >= hi) {
		*why = emu_fmt("%p is not in any device allocation (the nearest below, %p, has %zu bytes)", p, (void *)lo, it->second.bytes);
		return false;
	}
	if (n > hi - a) {
		*why = emu_fmt("[%p, +%zu) runs %zu bytes past the end of the %zu-byte allocation at %p", p, n, n - (hi - a), it->second.bytes, (void *)lo);
		return false;
	}
	return true;
}

EMU_API int cudaMallocHost(void **p, size_t n) {
	CHECK_DEVICE();
	if (!p) return emu_fail(cudaErrorInvalidValue, "null pointer");
	void *m = nullptr;
	if (posix_memalign(&m, 4096, n ? n : 1) != 0) return emu_fail(cudaErrorMemoryAllocation, emu_fmt("%zu host bytes", n));
	std::lock_guard<std::mutex> g(mu);
	host_allocs[(uintptr_t)m] = n;
	*p = m;
	return 0;
}

EMU_API int cudaFreeHost(void *p) {
	CHECK_DEVICE();
	if (!p) return 0;
	emu_drain_all(); // as CUDA, freeing waits for the device
	std::lock_guard<std::mutex> g(mu);
	if (!host_allocs.erase((uintptr_t)p)) return emu_fail(cudaErrorInvalidValue, emu_fmt("%p is not from cudaMallocHost", p));
	free(p);
	return 0;
}

// ---- streams and events ----
//
// Work queued on a stream runs in order, but only when the host waits for it
// (stream, event or device synchronisation, a copy into pageable memory, a
// free), when another stream waits for an event recorded after it, or one
// operation per cudaEventQuery that finds its event not yet reached (so a
// polling loop makes progress and sees cudaErrorNotReady at least once). A
// missing synchronisation therefore shows on the emulator as it would on a
// GPU. CUDAEMU_SYNC=1 runs everything as it is queued instead. Copies from
// pageable host memory are staged when queued, copies into it complete before
// the call returns, as CUDA does; pinned memory (cudaMallocHost) is read and
// written when the copy runs.

struct Queue {
	std::deque<std::function<void()>> ops;
};
struct Stream {
	unsigned flags;
	Queue q;
};
struct EventState {
	Queue *q = nullptr;
	unsigned long long recorded = 0, reached = 0;
};
struct EventObj {
	std::shared_ptr<EventState> st;
};
static std::set<void *> streams, events;
static Queue default_q;
static std::recursive_mutex exec_mu; // held while queues change or work runs

static bool sync_mode(void) {
	static int v = [] {
		const char *e = getenv("CUDAEMU_SYNC");
		return e && *e && strcmp(e, "0") != 0 ? 1 : 0;
	}();
	return v;
}

bool emu_valid_stream(void *s) {
	if (s == nullptr || s == (void *)1 || s == (void *)2) return true; // default, legacy, per-thread
	std::lock_guard<std::mutex> g(mu);
	return streams.count(s) != 0;
}

static Queue *queue_of(void *s) {
	if (s == nullptr || s == (void *)1 || s == (void *)2) return &default_q;
	return &((Stream *)s)->q;
}

void emu_enqueue(void *s, std::function<void()> f) {
	if (sync_mode()) {
		std::lock_guard<std::recursive_mutex> g(exec_mu);
		f();
		return;
	}
	std::lock_guard<std::recursive_mutex> g(exec_mu);
	queue_of(s)->ops.push_back(std::move(f));
}

// run_one runs the oldest operation of q; false when q is empty.
static bool run_one(Queue *q) {
	std::lock_guard<std::recursive_mutex> g(exec_mu);
	if (q->ops.empty()) return false;
	std::function<void()> f = std::move(q->ops.front());
	q->ops.pop_front();
	f();
	return true;
}

static void drain(Queue *q) {
	while (run_one(q)) {
	}
}

void emu_drain_all(void) {
	std::lock_guard<std::recursive_mutex> g(exec_mu);
	drain(&default_q);
	std::vector<void *> ss;
	{
		std::lock_guard<std::mutex> l(mu);
		ss.assign(streams.begin(), streams.end());
	}
	for (void *s : ss) drain(&((Stream *)s)->q);
}

// wait_event runs e's stream until the record numbered target has been reached.
static void wait_event(const std::shared_ptr<EventState> &e, unsigned long long target) {
	std::lock_guard<std::recursive_mutex> g(exec_mu);
	while (e->reached < target && e->q && run_one(e->q)) {
	}
}

EMU_API int cudaDeviceSynchronize(void) {
	CHECK_DEVICE();
	emu_drain_all();
	return emu_sticky();
}

#define CHECK_STREAM(s)                                                                        \
	do {                                                                                   \
		if (!emu_valid_stream(s)) return emu_fail(cudaErrorInvalidResourceHandle, emu_fmt("stream %p", s)); \
	} while (0)

static bool pinned(const void *p, size_t n) {
	std::lock_guard<std::mutex> g(mu);
	auto it = host_allocs.upper_bound((uintptr_t)p);
	if (it == host_allocs.begin()) return false;
	--it;
	return (uintptr_t)p + n <= it->first + it->second;
}

EMU_API int cudaMemsetAsync(void *p, int v, size_t n, void *s) {
	CHECK_DEVICE();
	CHECK_STREAM(s);
	if (n == 0) return 0;
	std::string why;
	if (!emu_check_range(p, n, &why)) return emu_fail(cudaErrorInvalidValue, "cudaMemsetAsync: " + why);
	emu_enqueue(s, [=] { memset(p, v, n); });
	return 0;
}

EMU_API int cudaMemcpyAsync(void *dst, const void *src, size_t n, int kind, void *s) {
	CHECK_DEVICE();
	CHECK_STREAM(s);
	if (kind < 0 || kind > 4) return emu_fail(cudaErrorInvalidMemcpyDirection, emu_fmt("kind %d", kind));
	if (n == 0) return 0;
	std::string why;
	if (kind == 4) { // cudaMemcpyDefault: the pointers say
		bool dd = emu_check_range(dst, n, &why), sd = emu_check_range(src, n, &why);
		kind = dd ? (sd ? 3 : 1) : (sd ? 2 : 0);
	}
	if ((kind == 1 || kind == 3) && !emu_check_range(dst, n, &why)) return emu_fail(cudaErrorInvalidValue, "destination " + why);
	if ((kind == 2 || kind == 3) && !emu_check_range(src, n, &why)) return emu_fail(cudaErrorInvalidValue, "source " + why);
	if (kind == 1 && !pinned(src, n)) { // pageable source: staged now
		auto buf = std::make_shared<std::vector<char>>((const char *)src, (const char *)src + n);
		emu_enqueue(s, [=] { memcpy(dst, buf->data(), n); });
		return 0;
	}
	if ((kind == 2 || kind == 0) && !pinned(dst, n)) { // pageable destination: done on return
		drain(queue_of(s));
		if (int e = emu_sticky()) return e;
		memmove(dst, src, n);
		return 0;
	}
	emu_enqueue(s, [=] { memmove(dst, src, n); });
	return 0;
}

EMU_API int cudaStreamCreateWithFlags(void **s, unsigned flags) {
	CHECK_DEVICE();
	if (!s) return emu_fail(cudaErrorInvalidValue, "null pointer");
	Stream *st = new Stream{flags, {}};
	std::lock_guard<std::mutex> g(mu);
	streams.insert(st);
	*s = st;
	return 0;
}

// cudaStreamDestroy lets queued work finish first, as CUDA does.
EMU_API int cudaStreamDestroy(void *s) {
	CHECK_DEVICE();
	{
		std::lock_guard<std::mutex> g(mu);
		if (!streams.count(s)) return emu_fail(cudaErrorInvalidResourceHandle, emu_fmt("stream %p (destroyed twice?)", s));
	}
	std::lock_guard<std::recursive_mutex> x(exec_mu);
	drain(queue_of(s));
	std::lock_guard<std::mutex> g(mu);
	streams.erase(s);
	delete (Stream *)s;
	return 0;
}

EMU_API int cudaStreamSynchronize(void *s) {
	CHECK_DEVICE();
	CHECK_STREAM(s);
	drain(queue_of(s));
	return emu_sticky();
}

static std::shared_ptr<EventState> event_state(void *e) {
	std::lock_guard<std::mutex> g(mu);
	return events.count(e) ? ((EventObj *)e)->st : nullptr;
}

#define GET_EVENT(st, e)                                                                       \
	std::shared_ptr<EventState> st = event_state(e);                                      \
	if (!st) return emu_fail(cudaErrorInvalidResourceHandle, emu_fmt("event %p", e))

EMU_API int cudaEventCreateWithFlags(void **e, unsigned flags) {
	CHECK_DEVICE();
	(void)flags;
	if (!e) return emu_fail(cudaErrorInvalidValue, "null pointer");
	EventObj *ev = new EventObj{std::make_shared<EventState>()};
	std::lock_guard<std::mutex> g(mu);
	events.insert(ev);
	*e = ev;
	return 0;
}

EMU_API int cudaEventDestroy(void *e) {
	CHECK_DEVICE();
	std::lock_guard<std::mutex> g(mu);
	if (!events.erase(e)) return emu_fail(cudaErrorInvalidResourceHandle, emu_fmt("event %p (destroyed twice?)", e));
	delete (EventObj *)e; // queued records and waits hold the state
	return 0;
}

EMU_API int cudaEventRecord(void *e, void *s) {
	CHECK_DEVICE();
	GET_EVENT(st, e);
	CHECK_STREAM(s);
	std::lock_guard<std::recursive_mutex> x(exec_mu);
	st->q = queue_of(s);
	unsigned long long seq = ++st->recorded;
	emu_enqueue(s, [st, seq] { st->reached = seq; });
	return 0;
}

EMU_API int cudaEventQuery(void *e) {
	CHECK_DEVICE();
	GET_EVENT(st, e);
	std::lock_guard<std::recursive_mutex> x(exec_mu);
	if (st->reached >= st->recorded) return emu_sticky();
	if (st->q) run_one(st->q); // progress, as a GPU would make on its own
	return cudaErrorNotReady;      // not an error: the last error stays as it was
}

EMU_API int cudaEventSynchronize(void *e) {
	CHECK_DEVICE();
	GET_EVENT(st, e);
	wait_event(st, st->recorded);
	return emu_sticky();
}

EMU_API int cudaStreamWaitEvent(void *s, void *e, unsigned flags) {
	CHECK_DEVICE();
	(void)flags;
	CHECK_STREAM(s);
	GET_EVENT(st, e);
	unsigned long long target = st->recorded;
	emu_enqueue(s, [st, target] { wait_event(st, target); });
	return 0;
}

// cudaemu_check_range lets the emulated cuBLAS check its operands.
EMU_API int cudaemu_check_range(const void *p, size_t n, char *why, size_t whylen) {
	std::string w;
	if (emu_check_range(p, n, &w)) return 1;
	snprintf(why, whylen, "%s", w.c_str());
	return 0;
}

EMU_API int cudaemu_valid_stream(void *s) { return emu_valid_stream(s); }

// cudaemu_enqueue queues fn(ctx) on stream s for the emulated cuBLAS.
EMU_API void cudaemu_enqueue(void *s, void (*fn)(void *), void *ctx) {
	emu_enqueue(s, [fn, ctx] { fn(ctx); });
}
