// Kernel objects and launches. cudaLibraryLoadData dlopens the shared object
// the emulated NVRTC built; cudaLaunchKernel runs the grid one block after
// another, each block's threads as cooperative fibers (blocks.cc), checking
// the kernel's memory accesses (check.cc).
#include "emu_abi.h"
#include "emu_internal.h"
#include "blocks.h"
#include "elfsyms.h"

#include <dlfcn.h>
#include <link.h>
#include <elf.h>
#include <mutex>
#include <set>
#include <stdlib.h>
#include <string.h>
#include <memory>
#include <unistd.h>
#include <vector>

struct EmuLibrary;
struct EmuKernel {
	EmuLibrary *lib;
	std::string name;
	__emu_tramp_fn fn;
	int nparams;
	const int *psizes;
};
struct EmuLibrary {
	void *handle;
	__emu_thread **cur;
	std::vector<EmuKernel *> kernels;
	char *shared_lo, *shared_hi, *dsmem;
	std::vector<EmuSharedSym> syms;
};

static std::mutex lmu;
static std::set<EmuLibrary *> libraries;
static std::set<EmuKernel *> kernels;
static std::mutex launch_mu; // one grid at a time: kernel objects' shared memory is static

// elf_size is the length of an ELF image: its section headers come last.
static size_t elf_size(const unsigned char *p) {
	if (memcmp(p, ELFMAG, SELFMAG) != 0 || p[EI_CLASS] != ELFCLASS64) return 0;
	const Elf64_Ehdr *h = (const Elf64_Ehdr *)p;
	return (size_t)h->e_shoff + (size_t)h->e_shnum * h->e_shentsize;
}

EMU_API int cudaLibraryLoadData(void **out, const void *code, void *jo, void **jv, unsigned nj, void *lo, void **lv, unsigned nl) {
	(void)jo, (void)jv, (void)nj, (void)lo, (void)lv, (void)nl;
	if (int e = emu_device_error()) return emu_fail(e, "");
	if (!out || !code) return emu_fail(cudaErrorInvalidValue, "null pointer");
	size_t n = elf_size((const unsigned char *)code);
	if (n == 0) return emu_fail(cudaErrorInvalidKernelImage, "not an ELF image from the emulated NVRTC");
	const char *tmp = getenv("TMPDIR");
	std::string path = std::string(tmp && *tmp ? tmp : "/tmp") + "/cudaemu-kernel-XXXXXX";
	std::vector<char> pbuf(path.begin(), path.end());
	pbuf.push_back(0);
	int fd = mkstemp(pbuf.data());
	if (fd < 0) return emu_fail(cudaErrorInvalidKernelImage, "cannot create a temporary file in " + path);
	bool ok = write(fd, code, n) == (ssize_t)n;
	close(fd);
	void *h = ok ? dlopen(pbuf.data(), RTLD_NOW | RTLD_LOCAL) : nullptr;
	std::string dlerr = h ? "" : (ok ? dlerror() : "short write");
	unlink(pbuf.data());
	if (!h) return emu_fail(cudaErrorInvalidKernelImage, "dlopen: " + dlerr + " (a real CUBIN cannot run on the emulator)");
	int *abi = (int *)dlsym(h, "__emu_abi");
	__emu_hooks *hk = (__emu_hooks *)dlsym(h, "__emu_hk");
	__emu_thread **cur = (__emu_thread **)dlsym(h, "__emu_cur");
	__emu_kentry *ks = (__emu_kentry *)dlsym(h, "__emu_kernels");
	char **bounds = (char **)dlsym(h, "__emu_shared_bounds");
	char *dsmem = (char *)dlsym(h, "__emu_dsmem_buf");
	struct link_map *lm = nullptr;
	if (!abi || *abi != __EMU_ABI_VERSION || !hk || !cur || !ks || !bounds || !dsmem || dlinfo(h, RTLD_DI_LINKMAP, &lm) != 0) {
		dlclose(h);
		return emu_fail(cudaErrorInvalidKernelImage, "the image was not built by this emulator's NVRTC");
	}
	emu_install_hooks(hk);
	EmuLibrary *lib = new EmuLibrary{h, cur, {}, bounds[0], bounds[1], dsmem, emu_shared_syms((const unsigned char *)code, n, lm->l_addr)};
	for (; ks->name; ks++) lib->kernels.push_back(new EmuKernel{lib, ks->name, ks->fn, ks->nparams, ks->psizes});
	std::lock_guard<std::mutex> g(lmu);
	libraries.insert(lib);
	for (EmuKernel *k : lib->kernels) kernels.insert(k);
	*out = lib;
	return 0;
}

EMU_API int cudaLibraryUnload(void *l) {
	emu_drain_all(); // its kernels may still be queued
	std::lock_guard<std::mutex> g(lmu);
	EmuLibrary *lib = (EmuLibrary *)l;
	if (!libraries.erase(lib)) return emu_fail(cudaErrorInvalidResourceHandle, emu_fmt("library %p", l));
	for (EmuKernel *k : lib->kernels) {
		kernels.erase(k);
		delete k;
	}
	dlclose(lib->handle);
	delete lib;
	return 0;
}

EMU_API int cudaLibraryGetKernel(void **out, void *l, const char *name) {
	if (!out || !name) return emu_fail(cudaErrorInvalidValue, "null pointer");
	std::lock_guard<std::mutex> g(lmu);
	EmuLibrary *lib = (EmuLibrary *)l;
	if (!libraries.count(lib)) return emu_fail(cudaErrorInvalidResourceHandle, emu_fmt("library %p", l));
	for (EmuKernel *k : lib->kernels)
		if (k->name == name) {
			*out = k;
			return 0;
		}
	std::string have;
	for (EmuKernel *k : lib->kernels) have += (have.empty() ? "" : ", ") + k->name;
	return emu_fail(cudaErrorSymbolNotFound, emu_fmt("no kernel %s; the library has: %s (kernels must be extern \"C\" __global__)", name, have.c_str()));
}

struct Dim3 {
	unsigned x, y, z;
};

// check_config refuses what a GPU refuses (cudaErrorInvalidConfiguration).
static int check_config(Dim3 g, Dim3 b, size_t smem) {
	unsigned long long threads = (unsigned long long)b.x * b.y * b.z;
	if (b.x == 0 || b.y == 0 || b.z == 0 || g.x == 0 || g.y == 0 || g.z == 0)
		return emu_fail(cudaErrorInvalidConfiguration, emu_fmt("grid (%u,%u,%u) block (%u,%u,%u) has a zero dimension", g.x, g.y, g.z, b.x, b.y, b.z));
	if (threads > 1024 || b.x > 1024 || b.y > 1024 || b.z > 64)
		return emu_fail(cudaErrorInvalidConfiguration, emu_fmt("block (%u,%u,%u) is %llu threads; at most 1024 (x, y <= 1024, z <= 64)", b.x, b.y, b.z, threads));
	if (g.x > 2147483647u || g.y > 65535 || g.z > 65535)
		return emu_fail(cudaErrorInvalidConfiguration, emu_fmt("grid (%u,%u,%u) exceeds (2^31-1, 65535, 65535)", g.x, g.y, g.z));
	if (smem > 48 * 1024)
		return emu_fail(cudaErrorInvalidValue, emu_fmt("%zu bytes of dynamic shared memory; a launch gets at most 49152 without cudaFuncSetAttribute", smem));
	return 0;
}

EMU_API int cudaLaunchKernel(const void *f, Dim3 grid, Dim3 block, void **args, size_t smem, void *stream) {
	if (int e = emu_device_error()) return emu_fail(e, "");
	if (int s = emu_sticky()) return s;
	EmuKernel *k = (EmuKernel *)f;
	{
		std::lock_guard<std::mutex> g(lmu);
		if (!kernels.count(k)) return emu_fail(cudaErrorInvalidDeviceFunction, emu_fmt("%p is not a kernel from cudaLibraryGetKernel (library unloaded?)", f));
	}
	if (!emu_valid_stream(stream)) return emu_fail(cudaErrorInvalidResourceHandle, emu_fmt("stream %p", stream));
	if (int e = check_config(grid, block, smem)) return e;
	int n = 0;
	while (args && n <= 4096 && args[n]) n++;
	if (n != k->nparams)
		return emu_fail(cudaErrorInvalidValue, emu_fmt("kernel %s has %d parameters, the launch passed %d arguments", k->name.c_str(), k->nparams, n));
	// The arguments are copied now, as CUDA copies them at launch.
	std::vector<size_t> offs;
	size_t total = 0;
	for (int i = 0; i < n; i++) {
		offs.push_back(total);
		total += (k->psizes[i] + 7) & ~7;
	}
	auto params = std::make_shared<std::vector<char>>(total + 8);
	for (int i = 0; i < n; i++) memcpy(params->data() + offs[i], args[i], k->psizes[i]);
	__emu_uint3 gd{grid.x, grid.y, grid.z}, bd{block.x, block.y, block.z};
	EmuKernel kern = *k; // the library outlives the launch: cudaLibraryUnload drains first
	emu_enqueue(stream, [=] {
		if (emu_sticky()) return; // a failed kernel ends the context's work
		std::vector<void *> av(n + 1, nullptr);
		for (int i = 0; i < n; i++) av[i] = params->data() + offs[i];
		std::lock_guard<std::mutex> g(launch_mu);
		const EmuLibrary *lib = kern.lib;
		EmuGrid eg{kern.fn, lib->cur, av.data(), EmuCheckLaunch{kern.name.c_str(), lib->shared_lo, lib->shared_hi, lib->dsmem, smem, &lib->syms, gd, bd}};
		std::string err;
		if (!emu_run_grid(eg, &err)) emu_set_sticky(cudaErrorLaunchFailure, "kernel " + kern.name + ": " + err);
	});
	return 0;
}
