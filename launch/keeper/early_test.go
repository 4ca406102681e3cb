package keeper

import (
	"strings"
	"testing"
)

func TestLaunchesRanks(t *testing.T) {
	for _, tc := range []struct {
		args string
		role string
		want bool
	}{
		{"--nproc 4 -- /bin/true", "", true},
		{"--nproc 4 train --steps 3", "", true},
		{"train", "", true},
		{"--nproc 2 sample --prompt x", "", true},
		{"--nproc 2 bench p2p --json", "", true},
		{"--nproc 2 bench allreduce", "", true},
		{"train --steps 3", "rank", false}, // a rank the agent started
		{"--direct train", "", false},      // srun's task: a rank itself
		{"train --help", "", false},
		{"plan --stages 4", "", false},
		{"bench step", "", false},
		{"bench scaling --nproc 4", "", false}, // runs agents of its own
		{"bench", "", false},
		{"checkpoint compare a b", "", false},
		{"", "", false},
	} {
		if got := launchesRanks(strings.Fields(tc.args), tc.role); got != tc.want {
			t.Errorf("launchesRanks(%q, role %q) = %v, want %v", tc.args, tc.role, got, tc.want)
		}
	}
}
