//go:build cgo

package keeper

/*
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define GuardianName "pplaunch-guard" // keeper.GuardianName

// The guardian's memory: its stack, and what it needs to know. The agent
// frees it once it has reaped the guardian.
struct pp_guard {
	int rfd;
	char dir[4096];
	char kill[4096 + 16];
	char stack[64 << 10];
};

#if defined(__x86_64__) || defined(__aarch64__)
// pp_sys is a system call that sets no errno: where the guardian shares the
// agent's memory it shares the agent's thread's errno too.
static long pp_sys(long n, long a, long b, long c, long d) {
#if defined(__x86_64__)
	long r;
	register long r10 __asm__("r10") = d;
	__asm__ volatile("syscall" : "=a"(r) : "a"(n), "D"(a), "S"(b), "d"(c), "r"(r10) : "rcx", "r11", "memory");
	return r;
#else
	register long x8 __asm__("x8") = n;
	register long x0 __asm__("x0") = a;
	register long x1 __asm__("x1") = b;
	register long x2 __asm__("x2") = c;
	register long x3 __asm__("x3") = d;
	__asm__ volatile("svc 0" : "+r"(x0) : "r"(x8), "r"(x1), "r"(x2), "r"(x3) : "memory");
	return x0;
#endif
}
#define PP_SHARED 1
#else
static long pp_sys(long n, long a, long b, long c, long d) {
	long r = syscall(n, a, b, c, d);
	return r < 0 ? -errno : r;
}
#define PP_SHARED 0
#endif

// pp_guardian is the guardian: it holds only rfd, the read end of a pipe
// whose write end only the agent holds, and waits there. EOF means the agent
// is done or dead (SIGKILL included): the guardian writes "1" to the job's
// cgroup.kill, removes the cgroup directory once its processes have left it
// (a bounded while), and exits. It runs no Go code and makes only system
// calls. Every signal is blocked in it (SIGKILL aside), and it leads a
// process group of its own, so that neither the terminal nor a signal to the
// agent's group ends it before the agent.
static int pp_guardian(void *p) {
	struct pp_guard *g = p;
	pp_sys(SYS_setpgid, 0, 0, 0, 0);
	if (g->rfd > 0) pp_sys(SYS_close_range, 0, g->rfd - 1, 0, 0);
	pp_sys(SYS_close_range, g->rfd + 1, ~0U, 0, 0);
	char b;
	for (;;) {
		long n = pp_sys(SYS_read, g->rfd, (long)&b, 1, 0);
		if (n == 0 || (n < 0 && n != -EINTR)) break;
	}
	long fd = pp_sys(SYS_openat, AT_FDCWD, (long)g->kill, O_WRONLY | O_CLOEXEC, 0);
	if (fd >= 0) {
		pp_sys(SYS_write, fd, (long)"1", 1, 0);
		pp_sys(SYS_close, fd, 0, 0, 0);
	}
	struct timespec ms = {0, 1000000};
	for (int i = 0; i < 2000 && pp_sys(SYS_unlinkat, AT_FDCWD, (long)g->dir, AT_REMOVEDIR, 0) == -EBUSY; i++) {
		pp_sys(SYS_nanosleep, (long)&ms, 0, 0, 0);
	}
	pp_sys(SYS_exit_group, 0, 0, 0, 0);
	return 0;
}

// pp_guard starts the guardian with g. Where it can, it shares the agent's
// memory (CLONE_VM, as posix_spawn does) instead of copying it as fork
// does: copying the page tables of a Go process and tearing them down at the
// guardian's exit cost more than the rest of its life.
static int pp_guard(struct pp_guard *g) {
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	// The guardian has its name from its start: this thread's for a moment.
	char name[16] = {0};
	prctl(PR_GET_NAME, name, 0, 0, 0);
	prctl(PR_SET_NAME, GuardianName, 0, 0, 0);
	int pid;
	if (PP_SHARED) {
		pid = clone(pp_guardian, g->stack + sizeof g->stack, CLONE_VM | SIGCHLD, g);
	} else {
		pid = fork();
		if (pid == 0) pp_guardian(g);
	}
	int e = errno;
	prctl(PR_SET_NAME, name, 0, 0, 0);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	errno = e;
	return pid;
}
*/
import "C"

import (
	"errors"
	"syscall"
	"unsafe"
)

// guardian is the process that kills a job's cgroup once the agent is gone:
// its pid, the agent's end of its pipe, and its memory.
type guardian struct {
	pid, wfd int
	mem      *C.struct_pp_guard
}

// startGuardian starts the guardian of the cgroup dir (no exec: see pp_guardian).
func startGuardian(dir string) (guardian, error) {
	mem := (*C.struct_pp_guard)(C.calloc(1, C.sizeof_struct_pp_guard))
	if mem == nil {
		return guardian{}, errors.New("out of memory")
	}
	kill := dir + "/cgroup.kill"
	if len(kill) >= len(mem.kill) {
		C.free(unsafe.Pointer(mem))
		return guardian{}, errors.New("cgroup path too long: " + dir)
	}
	copy(unsafe.Slice((*byte)(unsafe.Pointer(&mem.dir[0])), len(mem.dir)), dir)
	copy(unsafe.Slice((*byte)(unsafe.Pointer(&mem.kill[0])), len(mem.kill)), kill)
	var p [2]int
	if err := syscall.Pipe2(p[:], syscall.O_CLOEXEC); err != nil {
		C.free(unsafe.Pointer(mem))
		return guardian{}, err
	}
	mem.rfd = C.int(p[0])
	pid, err := C.pp_guard(mem)
	syscall.Close(p[0])
	if pid < 0 {
		syscall.Close(p[1])
		C.free(unsafe.Pointer(mem))
		return guardian{}, err
	}
	return guardian{pid: int(pid), wfd: p[1], mem: mem}, nil
}

// release frees the guardian's memory, once it is reaped.
func (g guardian) release() {
	C.free(unsafe.Pointer(g.mem))
}
