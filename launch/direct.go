package launch

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/pplaunch/pplaunch/ranks/store"
)

// DirectEnv is --direct: the calling process is one rank of a job that srun or
// mpirun started, with no agent. It returns the rank environment contract
// (the same variables the agent gives its ranks), built from the launcher's
// variables: Slurm's (SLURM_PROCID, ...), Open MPI's (OMPI_COMM_WORLD_RANK, ...),
// MPICH/Hydra's (PMI_RANK, ...). Flags win over the environment. Rank 0 hosts
// the store at MASTER_ADDR:MASTER_PORT (EnvHostStore is set for it).
func DirectEnv(f Flags, getenv func(string) string) (map[string]string, error) {
	if err := agentOnly(f); err != nil {
		return nil, err
	}
	slurm, err := slurmStep(getenv)
	if err != nil {
		return nil, err
	}
	var rank, world, local, localSize, node, nnodes, restarts int
	var host, runID string
	port := DefaultPort
	switch {
	case slurm != nil:
		rank, world, local, localSize = slurm.procID, slurm.ntasks, slurm.localID, slurm.localSize
		node, nnodes, host, runID, port, restarts = slurm.nodeID, slurm.nnodes, slurm.firstHost, "slurm-"+slurm.id, slurm.port, slurm.restarts
	case getenv("OMPI_COMM_WORLD_RANK") != "":
		if err := readInts(getenv, []intVar{
			{&rank, "OMPI_COMM_WORLD_RANK"}, {&world, "OMPI_COMM_WORLD_SIZE"},
			{&local, "OMPI_COMM_WORLD_LOCAL_RANK"}, {&localSize, "OMPI_COMM_WORLD_LOCAL_SIZE"},
		}); err != nil {
			return nil, fmt.Errorf("--direct under mpirun: %w", err)
		}
		runID = "mpi-" + getenv("OMPI_MCA_ess_base_jobid")
	case getenv("PMI_RANK") != "":
		if err := readInts(getenv, []intVar{{&rank, "PMI_RANK"}, {&world, "PMI_SIZE"}}); err != nil {
			return nil, fmt.Errorf("--direct under mpiexec: %w", err)
		}
		local, localSize = rank, world
		if getenv("MPI_LOCALRANKID") != "" {
			if err := readInts(getenv, []intVar{{&local, "MPI_LOCALRANKID"}, {&localSize, "MPI_LOCALNRANKS"}}); err != nil {
				return nil, fmt.Errorf("--direct under mpiexec: %w", err)
			}
		}
		runID = "pmi-" + getenv("PMI_ID")
	default:
		return nil, fmt.Errorf("--direct: no launcher found in the environment (neither SLURM_PROCID in an srun step, OMPI_COMM_WORLD_RANK nor PMI_RANK is set); run under srun or mpirun, or drop --direct")
	}
	if world < 1 || rank < 0 || rank >= world || local < 0 || local >= localSize {
		return nil, fmt.Errorf("--direct: rank %d of %d, local rank %d of %d: inconsistent launcher variables", rank, world, local, localSize)
	}
	if slurm == nil {
		// MPI launchers say nothing of nodes; ranks are laid out node by node.
		// With uneven nodes the node rank is unknown (-1) unless flags give it.
		nnodes, node = -1, -1
		if world%localSize == 0 {
			nnodes, node = world/localSize, rank/localSize
		}
		if localSize == world {
			host = "127.0.0.1"
		}
	} else if nnodes == 1 {
		// A step on one node: its ranks reach rank 0's store on loopback, and
		// the store then listens there only (its token may derive from the run
		// id, which is no secret).
		host = "127.0.0.1"
	}
	// Flags (and their environment fallbacks) win.
	if f.NodeRank != nil {
		node = *f.NodeRank
	}
	if f.NNodes != nil {
		nnodes = *f.NNodes
	}
	if f.RdzvID != "" {
		runID = f.RdzvID
	}
	if f.MasterPort != nil {
		port = *f.MasterPort
	}
	if f.MasterAddr != "" {
		host = f.MasterAddr
	}
	switch {
	case nnodes == -1 || node == -1:
		return nil, fmt.Errorf("--direct: rank %d: %d ranks with %d on this node are not spread evenly over nodes, so the node count and rank are unknown; give --nnodes and --node-rank", rank, world, localSize)
	case nnodes < 1:
		return nil, fmt.Errorf("--direct: rank %d: --nnodes %d: must be 1 or more", rank, nnodes)
	case node < 0 || node >= nnodes:
		return nil, fmt.Errorf("--direct: rank %d: node rank %d is not in 0..%d (--nnodes %d)", rank, node, nnodes-1, nnodes)
	}
	if f.RdzvTimeout <= 0 {
		return nil, fmt.Errorf("--rdzv-timeout %v: must be positive", f.RdzvTimeout)
	}
	if f.RdzvEndpoint != "" {
		h, p, err := endpoint(Flags{RdzvEndpoint: f.RdzvEndpoint, MasterPort: &port}, nil)
		if err != nil {
			return nil, err
		}
		host, port = h, p
	}
	if host == "" {
		return nil, fmt.Errorf("--direct: rank %d: the job spans nodes and nothing names node 0's host; give --master-addr (or MASTER_ADDR)", rank)
	}
	token := getenv(store.EnvToken)
	switch {
	case token == "" && nnodes > 1:
		return nil, errNoToken(fmt.Sprintf("--direct: rank %d of %d on %d nodes", rank, world, nnodes))
	case token == "":
		token = DeriveToken(runID)
	}
	addr := joinHostPort(host, port)
	env := map[string]string{
		store.EnvRole:           store.RoleRank,
		store.EnvRank:           strconv.Itoa(rank),
		store.EnvLocalRank:      strconv.Itoa(local),
		store.EnvWorldSize:      strconv.Itoa(world),
		store.EnvLocalWorldSize: strconv.Itoa(localSize),
		store.EnvGroupRank:      strconv.Itoa(node),
		store.EnvNodeRank:       strconv.Itoa(node),
		store.EnvNumNodes:       strconv.Itoa(nnodes),
		store.EnvMasterAddr:     host,
		store.EnvMasterPort:     strconv.Itoa(port),
		store.EnvStoreAddr:      addr,
		store.EnvRunID:          runID,
		store.EnvToken:          token,
		store.EnvRestartCount:   strconv.Itoa(restarts),
		store.EnvMaxRestarts:    "0",
		store.EnvTERestartCount: strconv.Itoa(restarts),
		store.EnvTEMaxRestarts:  "0",
		store.EnvTERunID:        runID,
	}
	if rank == 0 {
		env[store.EnvHostStore] = "1"
	}
	return env, nil
}

type intVar struct {
	dst  *int
	name string
}

func readInts(getenv func(string) string, vars []intVar) error {
	for _, v := range vars {
		n, err := slurmInt(getenv, v.name)
		if err != nil {
			return err
		}
		*v.dst = n
	}
	return nil
}

// agentOnly rejects the flags that only an agent acts on: under --direct srun
// or mpirun starts, watches and restarts the ranks, and each process's output
// is its own, so these would be silently ignored.
func agentOnly(f Flags) error {
	var set []string
	if f.NProc != "1" {
		set = append(set, "--nproc "+f.NProc)
	}
	if f.MaxRestarts != 0 {
		set = append(set, "--max-restarts "+strconv.Itoa(f.MaxRestarts))
	}
	if f.Standalone {
		set = append(set, "--standalone")
	}
	if f.LogDir != "" {
		set = append(set, "--log-dir "+f.LogDir)
	}
	if f.Tee {
		set = append(set, "--tee")
	}
	if f.LocalRanksFilter != "" {
		set = append(set, "--local-ranks-filter "+f.LocalRanksFilter)
	}
	if len(set) > 0 {
		return fmt.Errorf("--direct makes this process one rank of a job that srun or mpirun runs, so %s would be ignored: drop it (srun --ntasks-per-node sets the ranks per node)", strings.Join(set, ", "))
	}
	return nil
}
