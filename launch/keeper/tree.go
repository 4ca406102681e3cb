package keeper

import (
	"os"
	"syscall"
)

// Without a cgroup, what a rank left behind is found by what the kernel
// keeps: the rank's process group (the rank leads it), and, for what left
// the group (setsid), the keeper's children, since the keeper is their
// subreaper once their parents are gone. A child whose environment says
// LOCAL_RANK=L belongs to local rank L (every rank's processes inherit it);
// one with no such entry (it cleared its environment) is killed when the
// keeper ends.

// children lists the keeper's child processes (of all its threads).
func children() []int {
	tasks, _ := os.ReadDir("/proc/self/task")
	var out []int
	for _, task := range tasks {
		b, err := os.ReadFile("/proc/self/task/" + task.Name() + "/children")
		if err != nil {
			continue
		}
		for _, f := range fields(string(b)) {
			if c, err := atoi(f); err == nil {
				out = append(out, c)
			}
		}
	}
	return out
}

// localRankOf reads which local rank a process's environment (NUL-separated,
// as /proc/PID/environ) belongs to; ok is false when it names none.
func localRankOf(environ []byte) (int, bool) {
	for _, kv := range split(string(environ), 0) {
		if v, ok := cutPrefix(kv, "LOCAL_RANK="); ok {
			n, err := atoi(v)
			return n, err == nil
		}
	}
	return 0, false
}

// doomed decides which of kids (the keeper's children, or the processes in
// the job's cgroup) to kill: not the running ranks; every other one when all
// is set; else those that belong to a rank that ended (owner: the local rank
// its environment names, if any).
func doomed(kids []int, running map[int]bool, ended map[int]bool, owner func(pid int) (int, bool), all bool) []int {
	var out []int
	for _, pid := range kids {
		if running[pid] {
			continue
		}
		if all {
			out = append(out, pid)
			continue
		}
		if l, ok := owner(pid); ok && ended[l] {
			out = append(out, pid)
		}
	}
	return out
}

// ownerFromProc is doomed's owner over /proc.
func ownerFromProc(pid int) (int, bool) {
	b, err := os.ReadFile("/proc/" + itoa(pid) + "/environ")
	if err != nil {
		return 0, false
	}
	return localRankOf(b)
}

// killProc SIGKILLs pid and its process group, if it leads one.
func killProc(pid int) {
	syscall.Kill(pid, syscall.SIGKILL)
	syscall.Kill(-pid, syscall.SIGKILL)
}
