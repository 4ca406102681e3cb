package launch

import (
	"os"
	"os/exec"
	"testing"
)

// keeperEnded is how a process ended: killed by sig, or exited with code.
func keeperEnded(t *testing.T, script string) *os.ProcessState {
	t.Helper()
	cmd := exec.Command("/bin/sh", "-c", script)
	err := cmd.Run()
	if _, ok := err.(*exec.ExitError); err != nil && !ok {
		t.Fatal(err)
	}
	return cmd.ProcessState
}

func TestKeeperDied(t *testing.T) {
	killed := keeperEnded(t, "kill -KILL $$")
	exited := keeperEnded(t, "exit 3")
	for _, tc := range []struct {
		name             string
		st               *os.ProcessState
		started, pending []int
		want             string
		code             int
	}{
		{"one rank, before it started", killed, nil, []int{2},
			"rank 2's keeper (pid 77) was killed by SIGKILL before the rank started", 137},
		{"four ranks, before any started", killed, nil, []int{4, 5, 6, 7},
			"the keeper of ranks 4-7 (pid 77) was killed by SIGKILL before any of them started", 137},
		{"half started", killed, []int{0, 1}, []int{2, 3},
			"the keeper of ranks 0-3 (pid 77) was killed by SIGKILL after ranks 0, 1 started and before 2, 3 did; ranks 0, 1 died with it", 137},
		{"one started", killed, []int{0}, []int{1, 2},
			"the keeper of ranks 0-2 (pid 77) was killed by SIGKILL after rank 0 started and before 1, 2 did; rank 0 died with it", 137},
		{"while they ran", killed, []int{0, 1, 2, 3, 5}, nil,
			"the keeper of ranks 0-3, 5 (pid 77) was killed by SIGKILL while they ran; they died with it", 137},
		{"one rank, while it ran", killed, []int{9}, nil,
			"rank 9's keeper (pid 77) was killed by SIGKILL while the rank ran; the rank died with it", 137},
		{"exited on its own", exited, nil, []int{0, 1},
			"the keeper of ranks 0, 1 (pid 77) exited with code 3 before any of them started", 3},
		{"status unknown", nil, nil, []int{0},
			"rank 0's keeper (pid 77) ended before the rank started", 1},
	} {
		if got := keeperDied(77, tc.st, tc.started, tc.pending); got != tc.want {
			t.Errorf("%s:\n got %s\nwant %s", tc.name, got, tc.want)
		}
		if got := keeperCode(tc.st); got != tc.code {
			t.Errorf("%s: exit code %d, want %d", tc.name, got, tc.code)
		}
	}
}

func TestRankList(t *testing.T) {
	for _, tc := range []struct {
		ranks []int
		want  string
	}{
		{nil, ""},
		{[]int{3}, "3"},
		{[]int{0, 1}, "0, 1"},
		{[]int{0, 1, 2}, "0-2"},
		{[]int{0, 2, 3, 4, 7, 8, 10}, "0, 2-4, 7, 8, 10"},
	} {
		if got := rankList(tc.ranks); got != tc.want {
			t.Errorf("rankList(%v) = %q, want %q", tc.ranks, got, tc.want)
		}
	}
}
