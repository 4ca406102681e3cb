package main

import (
	"fmt"
	"strconv"
)

// Where the sizes of `bench scaling` run.
const (
	targetLocal = "local" // agents on this machine, one node
	targetNetns = "netns" // simulated hosts in network namespaces
	targetSlurm = "slurm" // srun steps in the Slurm allocation
)

// scalingTarget is where a scaling run's sizes go and the most nodes
// there.
type scalingTarget struct {
	kind     string
	maxNodes int
}

func (t scalingTarget) String() string {
	switch t.kind {
	case targetNetns:
		return fmt.Sprintf("%d simulated hosts (network namespaces on one machine)", t.maxNodes)
	case targetSlurm:
		return fmt.Sprintf("the Slurm allocation's %d nodes", t.maxNodes)
	}
	return "this machine"
}

// short is String in a few words, for a picture's title.
func (t scalingTarget) short() string {
	switch t.kind {
	case targetNetns:
		return fmt.Sprintf("%d simulated hosts", t.maxNodes)
	case targetSlurm:
		return fmt.Sprintf("%d Slurm nodes", t.maxNodes)
	}
	return "one machine"
}

// chooseTarget decides where the sizes run: --netns N wins; inside a Slurm
// allocation (outside any step: srun steps cannot start steps of their
// own), its nodes; else this machine alone.
func chooseTarget(netns int, linkShaped bool, getenv func(string) string) (scalingTarget, error) {
	if netns < 0 || netns > 64 {
		return scalingTarget{}, fmt.Errorf("--netns %d: want 1 to 64 simulated hosts", netns)
	}
	if netns > 0 {
		return scalingTarget{targetNetns, netns}, nil
	}
	if linkShaped {
		return scalingTarget{}, fmt.Errorf("--link-rate and --link-delay shape the links of simulated hosts: give --netns N too (real hosts' links are what they are)")
	}
	if getenv("SLURM_JOB_ID") == "" {
		return scalingTarget{targetLocal, 1}, nil
	}
	if step := getenv("SLURM_STEP_ID"); step != "" && step != "batch" {
		return scalingTarget{}, fmt.Errorf("bench scaling runs srun steps itself: start it in the allocation (sbatch script or salloc shell), not under srun (this is step %s)", step)
	}
	for _, v := range []string{"SLURM_JOB_NUM_NODES", "SLURM_NNODES"} {
		if s := getenv(v); s != "" {
			n, err := strconv.Atoi(s)
			if err != nil || n < 1 {
				return scalingTarget{}, fmt.Errorf("%s=%q is not a node count", v, s)
			}
			return scalingTarget{targetSlurm, n}, nil
		}
	}
	return scalingTarget{}, fmt.Errorf("SLURM_JOB_ID is set but neither SLURM_JOB_NUM_NODES nor SLURM_NNODES: run inside an allocation (sbatch or salloc)")
}

// defaultSizes are the node counts and ranks per node when not given: the
// powers of two up to the target's nodes and the count itself, and 1, 2, 4
// ranks on one machine, 1 per node across hosts.
func defaultSizes(t scalingTarget, nodes, nproc []int) ([]int, []int, error) {
	if nodes == nil {
		for n := 1; n < t.maxNodes; n *= 2 {
			nodes = append(nodes, n)
		}
		nodes = append(nodes, t.maxNodes)
	}
	if nproc == nil {
		nproc = []int{1}
		if t.kind == targetLocal && len(nodes) == 1 {
			nproc = []int{1, 2, 4}
		}
	}
	for _, n := range nodes {
		switch {
		case n > t.maxNodes && t.kind == targetLocal:
			return nil, nil, fmt.Errorf("--nodes %d: this machine is one node; give --netns N to simulate N hosts on it, or run in a Slurm allocation", n)
		case n > t.maxNodes:
			return nil, nil, fmt.Errorf("--nodes %d: more than %s", n, t)
		}
	}
	return nodes, nproc, nil
}
