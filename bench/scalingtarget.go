package bench

import (
	"fmt"
	"os"
	"strconv"

	"github.com/pplaunch/pplaunch/launch/netns"
)

// Where the sizes of `bench scaling` run.
const (
	TargetLocal = "local" // agents on this machine, one node
	TargetNetns = "netns" // simulated hosts in network namespaces
	TargetSlurm = "slurm" // srun steps in the Slurm allocation
)

// ScalingTarget is where a scaling run's sizes go and the most nodes
// there.
type ScalingTarget struct {
	Kind     string
	MaxNodes int
}

func (t ScalingTarget) String() string {
	switch t.Kind {
	case TargetNetns:
		return fmt.Sprintf("%d simulated hosts (network namespaces on one machine)", t.MaxNodes)
	case TargetSlurm:
		return fmt.Sprintf("the Slurm allocation's %d nodes", t.MaxNodes)
	}
	return "this machine"
}

// Short is String in a few words, for a picture's title.
func (t ScalingTarget) Short() string {
	switch t.Kind {
	case TargetNetns:
		return fmt.Sprintf("%d simulated hosts", t.MaxNodes)
	case TargetSlurm:
		return fmt.Sprintf("%d Slurm nodes", t.MaxNodes)
	}
	return "one machine"
}

// ChooseTarget decides where the sizes run: --netns N wins; inside a Slurm
// allocation (outside any step: srun steps cannot start steps of their
// own), its nodes; else this machine alone.
func ChooseTarget(hosts int, linkShaped bool, getenv func(string) string) (ScalingTarget, error) {
	if hosts < 0 || hosts > 64 {
		return ScalingTarget{}, fmt.Errorf("--netns %d: want 1 to 64 simulated hosts", hosts)
	}
	if hosts > 0 {
		return ScalingTarget{TargetNetns, hosts}, nil
	}
	if linkShaped {
		return ScalingTarget{}, fmt.Errorf("--link-rate and --link-delay shape the links of simulated hosts: give --netns N too (real hosts' links are what they are)")
	}
	if getenv("SLURM_JOB_ID") == "" {
		return ScalingTarget{TargetLocal, 1}, nil
	}
	if step := getenv("SLURM_STEP_ID"); step != "" && step != "batch" {
		return ScalingTarget{}, fmt.Errorf("bench scaling runs srun steps itself: start it in the allocation (sbatch script or salloc shell), not under srun (this is step %s)", step)
	}
	for _, v := range []string{"SLURM_JOB_NUM_NODES", "SLURM_NNODES"} {
		if s := getenv(v); s != "" {
			n, err := strconv.Atoi(s)
			if err != nil || n < 1 {
				return ScalingTarget{}, fmt.Errorf("%s=%q is not a node count", v, s)
			}
			return ScalingTarget{TargetSlurm, n}, nil
		}
	}
	return ScalingTarget{}, fmt.Errorf("SLURM_JOB_ID is set but neither SLURM_JOB_NUM_NODES nor SLURM_NNODES: run inside an allocation (sbatch or salloc)")
}

// DefaultSizes are the node counts and ranks per node when not given: the
// powers of two up to the target's nodes and the count itself, and 1, 2, 4
// ranks on one machine, 1 per node across hosts.
func DefaultSizes(t ScalingTarget, nodes, nproc []int) ([]int, []int, error) {
	if nodes == nil {
		for n := 1; n < t.MaxNodes; n *= 2 {
			nodes = append(nodes, n)
		}
		nodes = append(nodes, t.MaxNodes)
	}
	if nproc == nil {
		nproc = []int{1}
		if t.Kind == TargetLocal && len(nodes) == 1 {
			nproc = []int{1, 2, 4}
		}
	}
	for _, n := range nodes {
		switch {
		case n > t.MaxNodes && t.Kind == TargetLocal:
			return nil, nil, fmt.Errorf("--nodes %d: this machine is one node; give --netns N to simulate N hosts on it, or run in a Slurm allocation", n)
		case n > t.MaxNodes:
			return nil, nil, fmt.Errorf("--nodes %d: more than %s", n, t)
		}
	}
	return nodes, nproc, nil
}

// CanRun checks that t can run sizes: simulated hosts need root and, for a
// delay, the netem qdisc.
func (t ScalingTarget) CanRun(delay bool) error {
	if t.Kind != TargetNetns {
		return nil
	}
	if os.Geteuid() != 0 {
		return fmt.Errorf("--netns: simulated hosts are network namespaces, which need root: run pplaunch as root (sudo), or leave out --netns")
	}
	if err := netns.Available(); err != nil {
		return fmt.Errorf("--netns: %w", err)
	}
	if delay {
		if err := netns.DelayAvailable(); err != nil {
			return fmt.Errorf("--link-delay: %w", err)
		}
	}
	return nil
}
