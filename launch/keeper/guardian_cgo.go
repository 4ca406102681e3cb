//go:build cgo

package keeper

/*
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define GuardianName "pplaunch-guard" // keeper.GuardianName

// pp_guard forks the guardian: a child that holds only rfd, the read end of
// a pipe whose write end only the agent holds, and waits there. EOF means the
// agent is done or dead (SIGKILL included): the guardian writes "1" to the
// job's cgroup.kill, removes the cgroup directory once its processes have
// left it (a bounded while), and exits. The child runs no Go code and makes
// only async-signal-safe calls: it is a copy of a multi-threaded process.
// Every signal is blocked in it (SIGKILL aside), and it leads its own
// process group, so that neither the terminal nor a signal to the agent's
// group ends it before the agent.
static int pp_guard(int rfd, const char *dir, const char *kill) {
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	pid_t pid = fork();
	if (pid != 0) {
		int e = errno;
		pthread_sigmask(SIG_SETMASK, &old, NULL);
		errno = e;
		return pid;
	}
	setpgid(0, 0);
	prctl(PR_SET_NAME, (unsigned long)GuardianName, 0, 0, 0);
	if (rfd > 0 && syscall(SYS_close_range, 0, rfd - 1, 0) != 0) {
		for (int fd = 0; fd < rfd; fd++) close(fd);
	}
	if (syscall(SYS_close_range, rfd + 1, ~0U, 0) != 0) {
		for (int fd = rfd + 1; fd < 65536; fd++) close(fd);
	}
	char b;
	for (;;) {
		ssize_t n = read(rfd, &b, 1);
		if (n == 0 || (n < 0 && errno != EINTR)) break;
	}
	int fd = open(kill, O_WRONLY | O_CLOEXEC);
	if (fd >= 0) {
		(void)!write(fd, "1", 1);
		close(fd);
	}
	struct timespec ms = {0, 1000000};
	for (int i = 0; i < 2000 && rmdir(dir) != 0 && errno == EBUSY; i++) {
		nanosleep(&ms, NULL);
	}
	_exit(0);
}
*/
import "C"

import (
	"syscall"
	"unsafe"
)

// guardian is the process that kills a job's cgroup once the agent is gone:
// its pid, and the agent's end of its pipe.
type guardian struct {
	pid, wfd int
}

// startGuardian forks the guardian of the cgroup dir (no exec: see pp_guard).
func startGuardian(dir string) (guardian, error) {
	var p [2]int
	if err := syscall.Pipe2(p[:], syscall.O_CLOEXEC); err != nil {
		return guardian{}, err
	}
	cdir, ckill := C.CString(dir), C.CString(dir+"/cgroup.kill")
	defer C.free(unsafe.Pointer(cdir))
	defer C.free(unsafe.Pointer(ckill))
	pid, err := C.pp_guard(C.int(p[0]), cdir, ckill)
	syscall.Close(p[0])
	if pid < 0 {
		syscall.Close(p[1])
		return guardian{}, err
	}
	return guardian{pid: int(pid), wfd: p[1]}, nil
}
