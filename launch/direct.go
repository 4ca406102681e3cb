package launch

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/pplaunch/pplaunch/contract"
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
	p, err := launcherPlace(getenv)
	if err != nil {
		return nil, err
	}
	p.applyFlags(f)
	if err := p.checkNodes(); err != nil {
		return nil, err
	}
	if f.RdzvTimeout <= 0 {
		return nil, fmt.Errorf("--rdzv-timeout %v: must be positive", f.RdzvTimeout)
	}
	if f.RdzvEndpoint != "" {
		h, port, err := endpoint(Flags{RdzvEndpoint: f.RdzvEndpoint, MasterPort: &p.port}, nil)
		if err != nil {
			return nil, err
		}
		p.host, p.port = h, port
	}
	if p.host == "" {
		return nil, fmt.Errorf("--direct: rank %d: the job spans nodes and nothing names node 0's host; give --master-addr (or MASTER_ADDR)", p.rank)
	}
	token := getenv(contract.EnvToken)
	switch {
	case token == "" && p.nnodes > 1:
		return nil, errNoToken(fmt.Sprintf("--direct: rank %d of %d on %d nodes", p.rank, p.world, p.nnodes))
	case token == "":
		token = DeriveToken(p.runID)
	}
	return p.env(token), nil
}

// directPlace is where this process sits in a launcher-started job, and where
// rank 0's store is.
type directPlace struct {
	rank, world, local, localSize, node, nnodes, restarts int
	host, runID                                           string
	port                                                  int
}

// launcherPlace reads the place from whichever launcher started the process:
// a Slurm step, Open MPI or MPICH/Hydra, in that order.
func launcherPlace(getenv func(string) string) (directPlace, error) {
	slurm, err := slurmStep(getenv)
	if err != nil {
		return directPlace{}, err
	}
	if slurm != nil {
		return slurmPlace(slurm)
	}
	p := directPlace{port: DefaultPort}
	switch {
	case getenv("OMPI_COMM_WORLD_RANK") != "":
		if err := readInts(getenv, []intVar{
			{&p.rank, "OMPI_COMM_WORLD_RANK"}, {&p.world, "OMPI_COMM_WORLD_SIZE"},
			{&p.local, "OMPI_COMM_WORLD_LOCAL_RANK"}, {&p.localSize, "OMPI_COMM_WORLD_LOCAL_SIZE"},
		}); err != nil {
			return p, fmt.Errorf("--direct under mpirun: %w", err)
		}
		p.runID = "mpi-" + getenv("OMPI_MCA_ess_base_jobid")
	case getenv("PMI_RANK") != "":
		if err := readInts(getenv, []intVar{{&p.rank, "PMI_RANK"}, {&p.world, "PMI_SIZE"}}); err != nil {
			return p, fmt.Errorf("--direct under mpiexec: %w", err)
		}
		p.local, p.localSize = p.rank, p.world
		if getenv("MPI_LOCALRANKID") != "" {
			if err := readInts(getenv, []intVar{{&p.local, "MPI_LOCALRANKID"}, {&p.localSize, "MPI_LOCALNRANKS"}}); err != nil {
				return p, fmt.Errorf("--direct under mpiexec: %w", err)
			}
		}
		p.runID = "pmi-" + getenv("PMI_ID")
	default:
		return p, fmt.Errorf("--direct: no launcher found in the environment (neither SLURM_PROCID in an srun step, OMPI_COMM_WORLD_RANK nor PMI_RANK is set); run under srun or mpirun, or drop --direct")
	}
	if err := p.checkRanks(); err != nil {
		return p, err
	}
	// MPI launchers say nothing of nodes; ranks are laid out node by node.
	// With uneven nodes the node rank is unknown (-1) unless flags give it.
	p.nnodes, p.node = -1, -1
	if p.world%p.localSize == 0 {
		p.nnodes, p.node = p.world/p.localSize, p.rank/p.localSize
	}
	if p.localSize == p.world {
		p.host = "127.0.0.1"
	}
	return p, nil
}

// slurmPlace is the place an srun step gives.
func slurmPlace(s *slurmInfo) (directPlace, error) {
	p := directPlace{
		rank: s.procID, world: s.ntasks, local: s.localID, localSize: s.localSize,
		node: s.nodeID, nnodes: s.nnodes, host: s.firstHost, runID: "slurm-" + s.id,
		port: s.port, restarts: s.restarts,
	}
	if err := p.checkRanks(); err != nil {
		return p, err
	}
	if p.nnodes == 1 {
		// A step on one node: its ranks reach rank 0's store on loopback, and
		// the store then listens there only (its token may derive from the run
		// id, which is no secret).
		p.host = "127.0.0.1"
	}
	return p, nil
}

func (p directPlace) checkRanks() error {
	if p.world < 1 || p.rank < 0 || p.rank >= p.world || p.local < 0 || p.local >= p.localSize {
		return fmt.Errorf("--direct: rank %d of %d, local rank %d of %d: inconsistent launcher variables", p.rank, p.world, p.local, p.localSize)
	}
	return nil
}

// applyFlags lets flags (and their environment fallbacks) win over the launcher.
func (p *directPlace) applyFlags(f Flags) {
	if f.NodeRank != nil {
		p.node = *f.NodeRank
	}
	if f.NNodes != nil {
		p.nnodes = f.NNodes.Max
	}
	if f.RdzvID != "" {
		p.runID = f.RdzvID
	}
	if f.MasterPort != nil {
		p.port = *f.MasterPort
	}
	if f.MasterAddr != "" {
		p.host = f.MasterAddr
	}
}

func (p directPlace) checkNodes() error {
	switch {
	case p.nnodes == -1 || p.node == -1:
		return fmt.Errorf("--direct: rank %d: %d ranks with %d on this node are not spread evenly over nodes, so the node count and rank are unknown; give --nnodes and --node-rank", p.rank, p.world, p.localSize)
	case p.nnodes < 1:
		return fmt.Errorf("--direct: rank %d: --nnodes %d: must be 1 or more", p.rank, p.nnodes)
	case p.node < 0 || p.node >= p.nnodes:
		return fmt.Errorf("--direct: rank %d: node rank %d is not in 0..%d (--nnodes %d)", p.rank, p.node, p.nnodes-1, p.nnodes)
	}
	return nil
}

// env is the rank environment contract for this place.
func (p directPlace) env(token string) map[string]string {
	env := map[string]string{
		contract.EnvRole:           contract.RoleRank,
		contract.EnvRank:           strconv.Itoa(p.rank),
		contract.EnvLocalRank:      strconv.Itoa(p.local),
		contract.EnvWorldSize:      strconv.Itoa(p.world),
		contract.EnvLocalWorldSize: strconv.Itoa(p.localSize),
		contract.EnvGroupRank:      strconv.Itoa(p.node),
		contract.EnvNodeRank:       strconv.Itoa(p.node),
		contract.EnvNumNodes:       strconv.Itoa(p.nnodes),
		contract.EnvMasterAddr:     p.host,
		contract.EnvMasterPort:     strconv.Itoa(p.port),
		contract.EnvStoreAddr:      joinHostPort(p.host, p.port),
		contract.EnvRunID:          p.runID,
		contract.EnvToken:          token,
		contract.EnvRestartCount:   strconv.Itoa(p.restarts),
		contract.EnvMaxRestarts:    "0",
		contract.EnvTERestartCount: strconv.Itoa(p.restarts),
		contract.EnvTEMaxRestarts:  "0",
		contract.EnvTERunID:        p.runID,
	}
	if p.rank == 0 {
		env[contract.EnvHostStore] = "1"
	}
	return env
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
	if f.RdzvBackend != "" && !slices.Contains(builtinBackends, f.RdzvBackend) {
		set = append(set, "--rdzv-backend "+f.RdzvBackend) // agents meet there; ranks only at the store
	}
	if f.NNodes != nil && f.NNodes.Min < f.NNodes.Max {
		set = append(set, "--nnodes "+f.NNodes.String()+" (elastic: the agents re-form the world)")
	}
	if len(set) > 0 {
		return fmt.Errorf("--direct makes this process one rank of a job that srun or mpirun runs, so %s would be ignored: drop it (srun --ntasks-per-node sets the ranks per node)", strings.Join(set, ", "))
	}
	return nil
}
