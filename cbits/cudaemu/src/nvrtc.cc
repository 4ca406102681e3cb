// The emulated NVRTC: nvrtcCompileProgram compiles the kernel source with the
// host C++ compiler ($CUDAEMU_CXX, else g++) as
//   g++ -std=c++17 -O2 -fPIC -shared -include cudaemu_kernel.h ...
// into a shared object whose bytes are the "CUBIN" the emulated
// cudaLibraryLoadData loads. The program log is the compiler's output. Each
// extern "C" __global__ kernel gets a trampoline that unpacks
// cudaLaunchKernel's void **args into its parameters, and each
// `extern __shared__ T name[]` is linked to the object's dynamic shared
// memory buffer. NVRTC options are translated or refused as NVRTC refuses an
// unknown one; #include is refused, since the project's kernels are
// header-free.
#define _GNU_SOURCE 1
#include <dlfcn.h>
#include <dirent.h>
#include <fcntl.h>
#include <mutex>
#include <regex>
#include <set>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <string>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

#define EMU_API extern "C" __attribute__((visibility("default")))

extern char **environ;

enum {
	NVRTC_SUCCESS = 0,
	NVRTC_ERROR_OUT_OF_MEMORY = 1,
	NVRTC_ERROR_PROGRAM_CREATION_FAILURE = 2,
	NVRTC_ERROR_INVALID_INPUT = 3,
	NVRTC_ERROR_INVALID_PROGRAM = 4,
	NVRTC_ERROR_INVALID_OPTION = 5,
	NVRTC_ERROR_COMPILATION = 6,
	NVRTC_ERROR_BUILTIN_OPERATION_FAILURE = 7,
};

struct Program {
	std::string src, name, log;
	std::vector<char> cubin;
};
static std::mutex mu; // guards programs; a program is used by one thread at a time, as NVRTC requires
static std::set<Program *> programs;

EMU_API const char *nvrtcGetErrorString(int r) {
	static const char *names[] = {"NVRTC_SUCCESS", "NVRTC_ERROR_OUT_OF_MEMORY", "NVRTC_ERROR_PROGRAM_CREATION_FAILURE",
				      "NVRTC_ERROR_INVALID_INPUT", "NVRTC_ERROR_INVALID_PROGRAM", "NVRTC_ERROR_INVALID_OPTION",
				      "NVRTC_ERROR_COMPILATION", "NVRTC_ERROR_BUILTIN_OPERATION_FAILURE"};
	if (r >= 0 && r < (int)(sizeof names / sizeof names[0])) return names[r];
	return "NVRTC_ERROR unknown";
}

EMU_API int nvrtcVersion(int *major, int *minor) {
	if (!major || !minor) return NVRTC_ERROR_INVALID_INPUT;
	*major = 13;
	*minor = 0;
	return NVRTC_SUCCESS;
}

EMU_API int nvrtcCreateProgram(void **prog, const char *src, const char *name, int nh, const char *const *h, const char *const *hn) {
	(void)h, (void)hn;
	if (!prog || !src) return NVRTC_ERROR_INVALID_INPUT;
	if (nh != 0) return NVRTC_ERROR_INVALID_INPUT; // kernels are header-free
	Program *p = new Program{src, name && *name ? name : "default_program", "", {}};
	std::lock_guard<std::mutex> g(mu);
	programs.insert(p);
	*prog = p;
	return NVRTC_SUCCESS;
}

EMU_API int nvrtcDestroyProgram(void **prog) {
	std::lock_guard<std::mutex> g(mu);
	if (!prog || !programs.erase((Program *)*prog)) return NVRTC_ERROR_INVALID_PROGRAM;
	delete (Program *)*prog;
	*prog = nullptr;
	return NVRTC_SUCCESS;
}

static Program *get(void *p) {
	std::lock_guard<std::mutex> g(mu);
	return programs.count((Program *)p) ? (Program *)p : nullptr;
}

EMU_API int nvrtcGetProgramLogSize(void *prog, size_t *n) {
	Program *p = get(prog);
	if (!p || !n) return NVRTC_ERROR_INVALID_PROGRAM;
	*n = p->log.size() + 1;
	return NVRTC_SUCCESS;
}

EMU_API int nvrtcGetProgramLog(void *prog, char *buf) {
	Program *p = get(prog);
	if (!p || !buf) return NVRTC_ERROR_INVALID_PROGRAM;
	memcpy(buf, p->log.c_str(), p->log.size() + 1);
	return NVRTC_SUCCESS;
}

EMU_API int nvrtcGetCUBINSize(void *prog, size_t *n) {
	Program *p = get(prog);
	if (!p || !n) return NVRTC_ERROR_INVALID_PROGRAM;
	*n = p->cubin.size();
	return NVRTC_SUCCESS;
}

EMU_API int nvrtcGetCUBIN(void *prog, char *buf) {
	Program *p = get(prog);
	if (!p || !buf) return NVRTC_ERROR_INVALID_PROGRAM;
	if (p->cubin.empty()) return NVRTC_ERROR_INVALID_INPUT;
	memcpy(buf, p->cubin.data(), p->cubin.size());
	return NVRTC_SUCCESS;
}

// strip_comments blanks comments (keeping newlines), so that scanning the
// source for kernels does not find commented-out ones.
static std::string strip_comments(const std::string &s) {
	std::string o = s;
	for (size_t i = 0; i + 1 < o.size(); i++) {
		if (o[i] == '"' || o[i] == '\'') {
			char q = o[i];
			for (i++; i < o.size() && o[i] != q; i++)
				if (o[i] == '\\') i++;
		} else if (o[i] == '/' && o[i + 1] == '/') {
			for (; i < o.size() && o[i] != '\n'; i++) o[i] = ' ';
		} else if (o[i] == '/' && o[i + 1] == '*') {
			size_t e = o.find("*/", i + 2);
			e = e == std::string::npos ? o.size() : e + 2;
			for (; i < e; i++)
				if (o[i] != '\n') o[i] = ' ';
			i--;
		}
	}
	return o;
}

static std::vector<std::string> kernel_names(const std::string &code) {
	static const std::regex re("extern\\s*\"C\"\\s+__global__\\s+(?:__launch_bounds__\\s*\\([^)]*\\)\\s*)?void\\s+"
				   "(?:__launch_bounds__\\s*\\([^)]*\\)\\s*)?([A-Za-z_]\\w*)\\s*\\(");
	std::vector<std::string> out;
	std::set<std::string> seen;
	for (auto it = std::sregex_iterator(code.begin(), code.end(), re); it != std::sregex_iterator(); ++it)
		if (seen.insert((*it)[1]).second) out.push_back((*it)[1]);
	return out;
}

static std::vector<std::string> dynamic_shared(const std::string &code) {
	static const std::regex re("extern\\s+__shared__\\s+[^;]*?([A-Za-z_]\\w*)\\s*\\[\\s*\\]\\s*;");
	std::set<std::string> seen;
	std::vector<std::string> out;
	for (auto it = std::sregex_iterator(code.begin(), code.end(), re); it != std::sregex_iterator(); ++it)
		if (seen.insert((*it)[1]).second) out.push_back((*it)[1]);
	return out;
}

// translate turns NVRTC options into compiler arguments, or says which
// option is not understood.
static bool translate(int n, const char *const *opts, std::vector<std::string> *args, std::string *bad) {
	std::string arch = "sm_75";
	for (int i = 0; i < n; i++) {
		std::string o = opts[i] ? opts[i] : "";
		auto val = [&](const char *pre) -> bool {
			size_t l = strlen(pre);
			if (o.compare(0, l, pre) == 0) {
				o = o.substr(l);
				return true;
			}
			return false;
		};
		if (val("--gpu-architecture=") || val("-arch=")) {
			arch = o;
		} else if (o == "-arch" || o == "--gpu-architecture") {
			if (++i >= n) return *bad = o + " needs a value", false;
			arch = opts[i];
		} else if (val("-D") || val("--define-macro=")) {
			args->push_back("-D" + o);
		} else if (val("-U") || val("--undefine-macro=")) {
			args->push_back("-U" + o);
		} else if (val("--std=") || val("-std=")) {
			if (o != "c++03" && o != "c++11" && o != "c++14" && o != "c++17" && o != "c++20") return *bad = "--std=" + o, false;
			args->push_back("-std=" + o);
		} else if (o == "-w" || o == "--disable-warnings") {
			args->push_back("-w");
		} else if (o == "-Xptxas" || o == "--maxrregcount") {
			if (++i >= n) return *bad = o + " needs a value", false;
		} else if (val("--ptxas-options=") || val("-maxrregcount=") || val("--maxrregcount=") || val("--fmad=") ||
			   val("-fmad=") || val("-ftz=") || val("--ftz=") || val("-prec-div=") || val("--prec-div=") ||
			   val("-prec-sqrt=") || val("--prec-sqrt=") || o == "-lineinfo" || o == "--generate-line-info" ||
			   o == "-G" || o == "--device-debug" || o == "-default-device" || o == "--device-as-default-execution-space" ||
			   o == "--extra-device-vectorization" || o == "-extra-device-vectorization" || o == "--restrict" ||
			   o == "-restrict" || o == "--use_fast_math" || o == "-use_fast_math" || o == "--resource-usage") {
			// Affects GPU code generation only.
		} else {
			return *bad = o, false;
		}
	}
	static const std::regex archre("(sm|compute)_([0-9]+)[af]?");
	std::smatch m;
	if (!std::regex_match(arch, m, archre)) return *bad = "--gpu-architecture=" + arch, false;
	args->push_back("-D__CUDA_ARCH__=" + std::to_string(std::stoi(m[2]) * 10));
	return true;
}

static std::string my_dir(void) {
	Dl_info info;
	if (!dladdr((void *)nvrtcVersion, &info) || !info.dli_fname) return ".";
	std::string f = info.dli_fname;
	size_t s = f.rfind('/');
	return s == std::string::npos ? "." : f.substr(0, s);
}

// run runs argv, returning its exit status and its stdout and stderr.
static int run(const std::vector<std::string> &argv, std::string *out) {
	int fds[2];
	if (pipe2(fds, O_CLOEXEC) != 0) return *out = "cudaemu: pipe failed", -1;
	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
	posix_spawn_file_actions_adddup2(&fa, fds[1], 2);
	std::vector<char *> av;
	for (const std::string &a : argv) av.push_back((char *)a.c_str());
	av.push_back(nullptr);
	pid_t pid;
	int rc = posix_spawnp(&pid, av[0], &fa, nullptr, av.data(), environ);
	posix_spawn_file_actions_destroy(&fa);
	close(fds[1]);
	if (rc != 0) {
		close(fds[0]);
		*out = std::string("cudaemu: cannot run ") + av[0] + ": " + strerror(rc);
		return -1;
	}
	char buf[4096];
	ssize_t r;
	while ((r = read(fds[0], buf, sizeof buf)) > 0) out->append(buf, r);
	close(fds[0]);
	int st = 0;
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
	}
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

static std::string safe_name(const std::string &n) {
	std::string b = n.substr(n.rfind('/') == std::string::npos ? 0 : n.rfind('/') + 1), o;
	for (char c : b) o += (isalnum((unsigned char)c) || c == '.' || c == '_' || c == '-') ? c : '_';
	if (o.empty() || o[0] == '.') o = "prog" + o;
	return o;
}

static void replace_all(std::string *s, const std::string &from, const std::string &to) {
	for (size_t p = 0; (p = s->find(from, p)) != std::string::npos; p += to.size()) s->replace(p, from.size(), to);
}

static void remove_dir(const std::string &d) {
	if (DIR *dp = opendir(d.c_str())) {
		while (struct dirent *e = readdir(dp))
			if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) unlink((d + "/" + e->d_name).c_str());
		closedir(dp);
	}
	rmdir(d.c_str());
}

static bool read_file(const std::string &path, std::vector<char> *out) {
	FILE *f = fopen(path.c_str(), "rb");
	if (!f) return false;
	char buf[65536];
	size_t r;
	while ((r = fread(buf, 1, sizeof buf, f)) > 0) out->insert(out->end(), buf, buf + r);
	fclose(f);
	return true;
}

// instrumentation is the compiler's thread-sanitizer instrumentation without
// its run time: every load and store of a kernel calls __tsan_readN or
// __tsan_writeN, which the kernel header defines (the runtime checks shared
// memory races, uninitialised shared memory and blocks that share device
// memory). GCC links libtsan into a shared object unless told it is static;
// neither compiler needs the function entry and exit calls.
static std::vector<std::string> instrumentation(const std::string &cxx) {
	std::string base = cxx.substr(cxx.rfind('/') == std::string::npos ? 0 : cxx.rfind('/') + 1);
	if (base.find("clang") != std::string::npos)
		return {"-fsanitize=thread", "-mllvm", "-tsan-instrument-func-entry-exit=0", "-mllvm", "-tsan-instrument-atomics=0"};
	return {"-fsanitize=thread", "-static-libtsan", "--param=tsan-instrument-func-entry-exit=0"};
}

EMU_API int nvrtcCompileProgram(void *prog, int n, const char *const *opts) {
	Program *p = get(prog);
	if (!p) return NVRTC_ERROR_INVALID_PROGRAM;
	p->log.clear();
	p->cubin.clear();
	std::vector<std::string> extra;
	std::string bad;
	if (!translate(n, opts, &extra, &bad)) {
		p->log = "nvrtc: error: unrecognized option or value: " + bad + "\n";
		return NVRTC_ERROR_INVALID_OPTION;
	}
	std::string code = strip_comments(p->src);
	if (std::regex_search(code, std::regex("^\\s*#\\s*include", std::regex::multiline))) {
		p->log = p->name + ": error: #include is not supported by the emulator (kernels are header-free)\n";
		return NVRTC_ERROR_COMPILATION;
	}
	const char *tmp = getenv("TMPDIR");
	std::string dtmpl = std::string(tmp && *tmp ? tmp : "/tmp") + "/cudaemu-nvrtc-XXXXXX";
	std::vector<char> dbuf(dtmpl.begin(), dtmpl.end());
	dbuf.push_back(0);
	if (!mkdtemp(dbuf.data())) {
		p->log = "cudaemu: cannot create a temporary directory " + dtmpl + "\n";
		return NVRTC_ERROR_BUILTIN_OPERATION_FAILURE;
	}
	std::string dir = dbuf.data(), src = dir + "/" + safe_name(p->name), so = dir + "/kernel.so";
	// `extern __shared__` loses __shared__ (static) so the declaration stays extern.
	std::string body = std::regex_replace(p->src, std::regex("extern(\\s+)__shared__"), "extern$1__emu_extern_shared__");
	body += "\n#line 1 \"<cudaemu launch trampolines>\"\n";
	std::vector<std::string> ks = kernel_names(code);
	for (size_t i = 0; i < ks.size(); i++)
		body += "extern \"C\" void __emu_tramp_" + std::to_string(i) + "(void **a) { __emu_call(&" + ks[i] + ", a); }\n";
	body += "extern \"C\" __attribute__((visibility(\"default\"))) const struct __emu_kentry __emu_kernels[] = {";
	for (size_t i = 0; i < ks.size(); i++)
		body += "{\"" + ks[i] + "\", __emu_tramp_" + std::to_string(i) + ", __emu_nparams(&" + ks[i] + "), __emu_psizes(&" + ks[i] + ")}, ";
	body += "{0, 0, 0, 0}};\n";
	FILE *f = fopen(src.c_str(), "w");
	if (!f || fwrite(body.data(), 1, body.size(), f) != body.size()) {
		if (f) fclose(f);
		remove_dir(dir);
		p->log = "cudaemu: cannot write " + src + "\n";
		return NVRTC_ERROR_BUILTIN_OPERATION_FAILURE;
	}
	fclose(f);
	const char *cxx = getenv("CUDAEMU_CXX");
	std::vector<std::string> argv = {cxx && *cxx ? cxx : "g++", "-x", "c++", "-std=c++17", "-O2", "-fPIC", "-shared",
					 "-fno-strict-aliasing", "-ffp-contract=off", "-fvisibility=hidden",
					 "-D__CUDACC__", "-D__CUDACC_RTC__", "-include", my_dir() + "/cudaemu_kernel.h"};
	std::vector<std::string> tsan = instrumentation(argv[0]);
	argv.insert(argv.end(), tsan.begin(), tsan.end());
	argv.insert(argv.end(), extra.begin(), extra.end());
	for (const std::string &s : dynamic_shared(code)) argv.push_back("-Wl,--defsym=" + s + "=__emu_dsmem_buf");
	argv.insert(argv.end(), {"-Wl,-z,defs", src, "-o", so, "-lm"});
	std::string out;
	int rc = run(argv, &out);
	replace_all(&out, dir + "/", "");
	p->log = out;
	bool ok = rc == 0 && read_file(so, &p->cubin);
	remove_dir(dir);
	return ok ? NVRTC_SUCCESS : NVRTC_ERROR_COMPILATION;
}
