package keeper

import (
	"strings"
	"testing"
)

// mountinfo of a host with the hybrid layout (cgroup v1 controllers, v2 in
// unified/) and one with v2 alone.
const (
	hybrid = `22 1 0:20 / /sys/fs/cgroup ro,nosuid - tmpfs tmpfs rw,mode=755
23 22 0:21 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
30 22 0:28 / /sys/fs/cgroup/unified rw,relatime shared:9 - cgroup2 cgroup2 rw
`
	unified = `25 30 0:23 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:4 - cgroup2 cgroup2 rw,nsdelegate
`
	v1only = `23 22 0:21 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
`
	// A container's bind mount of part of the host's hierarchy: its root is
	// not the hierarchy's, so paths from /proc/self/cgroup do not apply.
	bound = `40 30 0:23 /kubepods/pod1 /sys/fs/cgroup ro - cgroup2 cgroup2 rw
`
)

func TestJobCgroupDir(t *testing.T) {
	for _, tc := range []struct {
		name, mountinfo, self, setting string
		want, err                      string
	}{
		{"hybrid", hybrid, "4:memory:/x\n0::/\n", "", "/sys/fs/cgroup/unified/pplaunch-42", ""},
		{"unified, in a user's scope", unified, "0::/user.slice/user-1000.slice/session-3.scope\n", "", "/sys/fs/cgroup/user.slice/user-1000.slice/session-3.scope/pplaunch-42", ""},
		{"turned off", unified, "0::/\n", "off", "", "PPLAUNCH_CGROUP=off"},
		{"cgroup v1 only", v1only, "4:memory:/\n", "", "", "no cgroup v2 hierarchy is mounted"},
		{"bind-mounted part", bound, "0::/kubepods/pod1\n", "", "", "no cgroup v2 hierarchy is mounted"},
		{"in no v2 group", unified, "4:memory:/\n", "", "", "in no cgroup v2 group"},
	} {
		got, err := jobCgroupDir(tc.mountinfo, tc.self, tc.setting, "pplaunch-42")
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: got %q, %v; want an error with %q", tc.name, got, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%s: got %q, %v; want %q", tc.name, got, err, tc.want)
		}
	}
}
