package launch

import (
	"slices"
	"strings"
	"testing"

	"github.com/pplaunch/pplaunch/contract"
)

func TestDedupEnv(t *testing.T) {
	for _, c := range []struct{ in, want []string }{
		{nil, []string{}},
		{[]string{"A=1", "B=2"}, []string{"A=1", "B=2"}},
		{[]string{"A=1", "B=2", "A=3"}, []string{"B=2", "A=3"}},
		{[]string{"A=1", "A", "A="}, []string{"A="}},
	} {
		if got := dedupEnv(c.in); !slices.Equal(got, c.want) {
			t.Errorf("dedupEnv(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// RankEnv: the agent's ranks read their environment, an agent-to-be is no
// rank, and under --direct the launcher's variables make the rank contract.
func TestRankEnv(t *testing.T) {
	env := envFunc
	direct := baseFlags()
	direct.Direct = true
	get, rank, err := RankEnv(Flags{}, env(map[string]string{contract.EnvRole: contract.RoleRank, contract.EnvRank: "3"}))
	if err != nil || !rank || get(contract.EnvRank) != "3" {
		t.Errorf("the agent's rank: rank %v, RANK %q, %v", rank, get(contract.EnvRank), err)
	}
	if _, rank, err := RankEnv(Flags{}, env(nil)); rank || err != nil {
		t.Errorf("an agent: rank %v, %v", rank, err)
	}
	mpi := map[string]string{"OMPI_COMM_WORLD_RANK": "1", "OMPI_COMM_WORLD_SIZE": "2", "OMPI_COMM_WORLD_LOCAL_RANK": "1",
		"OMPI_COMM_WORLD_LOCAL_SIZE": "2", contract.EnvRank: "stale", "HOME": "/home/x"}
	get, rank, err = RankEnv(direct, env(mpi))
	if err != nil || !rank {
		t.Fatalf("under mpirun: rank %v, %v", rank, err)
	}
	if get(contract.EnvRank) != "1" || get(contract.EnvRole) != contract.RoleRank || get("HOME") != "/home/x" {
		t.Errorf("under mpirun: rank %v, RANK %q, role %q, HOME %q, %v", rank, get(contract.EnvRank), get(contract.EnvRole), get("HOME"), err)
	}
	if _, rank, err := RankEnv(direct, env(nil)); err == nil || rank || !strings.Contains(err.Error(), "no launcher found") {
		t.Errorf("--direct with no launcher: rank %v, %v", rank, err)
	}
}
