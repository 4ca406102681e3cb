package keeper

import (
	"errors"
	"os"
	"path"
	"syscall"
	"time"
)

// A job's cgroup: a directory made in the keeper's own cgroup v2 group,
// "pplaunch-PID", that every rank is cloned into (CLONE_INTO_CGROUP). The
// ranks' processes stay in it however they detach (setsid, double fork), so
// writing cgroup.kill there ends them all at once (as srun does) when the
// job ends or its agent is gone. One directory for the job rather than one
// per rank: making, opening and removing a directory for each rank cost the
// launch about 0.1 ms a rank. What one rank leaves behind while the others
// run is told apart by its environment, as without a cgroup (tree.go), among
// the cgroup's processes that are not running ranks.
// Where no cgroup v2 hierarchy is mounted, or the keeper's group is not
// writable (an unprivileged user without delegation, a read-only container
// mount), or the kernel has no cgroup.kill (before 5.14), the keeper works
// without: process groups and the ranks' environment (tree.go).

// cgroup2Mount finds where the cgroup v2 hierarchy is mounted, in the text of
// /proc/self/mountinfo ("" when it is not: cgroup v1 only).
func cgroup2Mount(mountinfo string) string {
	for _, line := range split(mountinfo, '\n') {
		// id parent major:minor root mountpoint options [optional...] - fstype source superoptions
		pre, post, ok := cut(line, " - ")
		if !ok {
			continue
		}
		f, g := fields(pre), fields(post)
		if len(f) >= 5 && len(g) >= 1 && g[0] == "cgroup2" && f[3] == "/" {
			return f[4]
		}
	}
	return ""
}

// ownCgroup is this process's cgroup v2 path, from the text of
// /proc/self/cgroup (its "0::PATH" line; "" when there is none).
func ownCgroup(selfCgroup string) (string, bool) {
	for _, line := range split(selfCgroup, '\n') {
		if p, ok := cutPrefix(line, "0::"); ok {
			return p, true
		}
	}
	return "", false
}

// jobCgroupDir is where a process makes its job's cgroup called name, or why
// it cannot: mountinfo and selfCgroup are the texts of /proc/self/mountinfo
// and /proc/self/cgroup, setting the value of CgroupEnv.
func jobCgroupDir(mountinfo, selfCgroup, setting, name string) (string, error) {
	if setting == "off" {
		return "", errors.New(CgroupEnv + "=off")
	}
	mnt := cgroup2Mount(mountinfo)
	if mnt == "" {
		return "", errors.New("no cgroup v2 hierarchy is mounted")
	}
	own, ok := ownCgroup(selfCgroup)
	if !ok {
		return "", errors.New("this process is in no cgroup v2 group")
	}
	return path.Join(mnt, own, name), nil
}

// cgroups is a job's cgroup directory, and it opened for CLONE_INTO_CGROUP
// (fd -1 once the kernel refused to clone into it).
type cgroups struct {
	dir string
	fd  int
}

// openCgroups makes the job's cgroup called name, or says why there is none
// (setting: the value of CgroupEnv).
func openCgroups(name, setting string) (*cgroups, error) {
	mi, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	sc, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return nil, err
	}
	dir, err := jobCgroupDir(string(mi), string(sc), setting, name)
	if err != nil {
		return nil, err
	}
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil, err
	}
	if _, err := os.Stat(path.Join(dir, "cgroup.kill")); err != nil {
		os.Remove(dir)
		return nil, errors.New("no cgroup.kill (Linux 5.14 or later has it): " + err.Error())
	}
	fd, err := syscall.Open(dir, oPath|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
	if err != nil {
		os.Remove(dir)
		return nil, err
	}
	return &cgroups{dir: dir, fd: fd}, nil
}

// procs lists the processes in the cgroup dir (its cgroup.procs).
func procs(dir string) ([]int, error) {
	b, err := os.ReadFile(path.Join(dir, "cgroup.procs"))
	if err != nil {
		return nil, err
	}
	var out []int
	for _, f := range fields(string(b)) {
		if n, err := atoi(f); err == nil {
			out = append(out, n)
		}
	}
	return out, nil
}

// Kill SIGKILLs every process in the cgroup dir and below (cgroup.kill).
func Kill(dir string) error {
	if dir == "" {
		return nil
	}
	return os.WriteFile(path.Join(dir, "cgroup.kill"), []byte("1"), 0)
}

// Remove removes the cgroup dir and those below it, once their processes are
// gone: a killed process leaves its group as it exits, so an EBUSY is
// retried a bounded while.
func Remove(dir string) error {
	if dir == "" {
		return nil
	}
	subs, _ := os.ReadDir(dir)
	for _, s := range subs {
		if s.IsDir() {
			Remove(path.Join(dir, s.Name()))
		}
	}
	deadline := time.Now().Add(2 * time.Second)
	for {
		err := syscall.Rmdir(dir)
		if err == nil || errors.Is(err, syscall.ENOENT) {
			return nil
		}
		if !errors.Is(err, syscall.EBUSY) || time.Now().After(deadline) {
			return &os.PathError{Op: "remove cgroup", Path: dir, Err: err}
		}
		time.Sleep(time.Millisecond) // the kernel sends no event we could wait on here
	}
}
