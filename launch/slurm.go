package launch

import (
	"fmt"
	"strconv"

	"github.com/pplaunch/pplaunch/launch/hostlist"
)

// slurmInfo is what an srun task learns from Slurm's environment.
type slurmInfo struct {
	id        string // JOB.STEP
	nnodes    int    // nodes of the step
	nodeID    int    // this node's index in the step
	ntasks    int    // tasks of the step
	procID    int    // this task's index in the step
	localID   int    // this task's index on its node
	localSize int    // tasks of the step on this node
	firstHost string // first host of the step's node list
	port      int    // port derived from the job id
	restarts  int    // SLURM_RESTART_COUNT (requeued jobs)
}

// slurmStep reads the variables srun gives each task. It returns nil outside an
// srun step (no SLURM_STEP_ID: not in Slurm, or in the batch script itself,
// which is no place to make a world from).
func slurmStep(getenv func(string) string) (*slurmInfo, error) {
	job, step := getenv("SLURM_JOB_ID"), getenv("SLURM_STEP_ID")
	if job == "" || step == "" {
		return nil, nil
	}
	s := &slurmInfo{id: job + "." + step}
	ints := []struct {
		dst   *int
		names []string
	}{
		{&s.nnodes, []string{"SLURM_STEP_NUM_NODES", "SLURM_NNODES"}},
		{&s.nodeID, []string{"SLURM_NODEID"}},
		{&s.ntasks, []string{"SLURM_STEP_NUM_TASKS", "SLURM_NTASKS"}},
		{&s.procID, []string{"SLURM_PROCID"}},
		{&s.localID, []string{"SLURM_LOCALID"}},
	}
	for _, v := range ints {
		n, err := slurmInt(getenv, v.names...)
		if err != nil {
			return nil, fmt.Errorf("slurm step %s: %w", s.id, err)
		}
		*v.dst = n
	}
	if rc := getenv("SLURM_RESTART_COUNT"); rc != "" {
		n, err := strconv.Atoi(rc)
		if err != nil || n < 0 {
			return nil, fmt.Errorf("slurm step %s: SLURM_RESTART_COUNT=%q is not a count", s.id, rc)
		}
		s.restarts = n
	}
	nodelist := getenv("SLURM_STEP_NODELIST")
	if nodelist == "" {
		nodelist = getenv("SLURM_JOB_NODELIST")
	}
	hosts, err := hostlist.Expand(nodelist)
	if err != nil {
		return nil, fmt.Errorf("slurm step %s: SLURM_STEP_NODELIST: %w", s.id, err)
	}
	if len(hosts) != s.nnodes {
		return nil, fmt.Errorf("slurm step %s: node list %q has %d hosts, SLURM_STEP_NUM_NODES says %d", s.id, nodelist, len(hosts), s.nnodes)
	}
	s.firstHost = hosts[0]
	perNode := getenv("SLURM_STEP_TASKS_PER_NODE")
	if perNode == "" {
		perNode = getenv("SLURM_TASKS_PER_NODE")
	}
	counts, err := hostlist.ExpandCounts(perNode)
	if err != nil {
		return nil, fmt.Errorf("slurm step %s: SLURM_STEP_TASKS_PER_NODE: %w", s.id, err)
	}
	if s.nodeID < 0 || s.nodeID >= len(counts) {
		return nil, fmt.Errorf("slurm step %s: SLURM_NODEID=%d but tasks per node %q lists %d nodes", s.id, s.nodeID, perNode, len(counts))
	}
	s.localSize = counts[s.nodeID]
	jobID, err := strconv.Atoi(job)
	if err != nil {
		// Heterogeneous and array jobs have ids like "123+1"; any stable number will do.
		jobID = 0
		for _, c := range job {
			jobID = jobID*31 + int(c)&0xffff
		}
	}
	s.port = 20000 + int(uint(jobID)%10000)
	return s, nil
}

// slurmInt reads the first of names that is set, as a non-negative integer.
func slurmInt(getenv func(string) string, names ...string) (int, error) {
	for _, name := range names {
		v := getenv(name)
		if v == "" {
			continue
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return 0, fmt.Errorf("%s=%q is not a non-negative integer", name, v)
		}
		return n, nil
	}
	return 0, fmt.Errorf("%s is not set", names[0])
}
