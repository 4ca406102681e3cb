package contract

// The environment contract between the agent (package launch) and its ranks
// (package ranks): the agent sets these, a rank reads them (and so does any
// program the agent runs, as under torchrun).
//
// The torchrun names are set so torch scripts run unchanged under pplaunch.
const (
	EnvRank           = "RANK"             // global rank, 0..WORLD_SIZE-1
	EnvLocalRank      = "LOCAL_RANK"       // rank on this node, 0..LOCAL_WORLD_SIZE-1
	EnvWorldSize      = "WORLD_SIZE"       // ranks in the job
	EnvLocalWorldSize = "LOCAL_WORLD_SIZE" // ranks on this node
	EnvGroupRank      = "GROUP_RANK"       // node rank (torchrun's name)
	EnvNodeRank       = "NODE_RANK"        // node rank
	EnvNumNodes       = "GROUP_WORLD_SIZE" // nodes in the job (torchrun: groups)
	// MASTER_ADDR:MASTER_PORT is node 0's host and a port left free there for
	// the ranks' own use (torch's rank 0 binds it, as under torchrun).
	EnvMasterAddr = "MASTER_ADDR"
	EnvMasterPort = "MASTER_PORT"
	// EnvStoreAddr is host:port of the job's pplaunch store (the agent's
	// rendezvous endpoint; under --direct, MASTER_ADDR:MASTER_PORT).
	EnvStoreAddr    = "PPLAUNCH_STORE_ADDR"
	EnvRunID        = "PPLAUNCH_RUN_ID"
	EnvRestartCount = "PPLAUNCH_RESTART_COUNT" // 0 on the first attempt
	EnvMaxRestarts  = "PPLAUNCH_MAX_RESTARTS"
	// EnvToken is the job's secret; every store connection must present it.
	EnvToken = "PPLAUNCH_TOKEN"
	// EnvRole is "rank" in a process the agent (or --direct) made a rank, so a
	// built-in job subcommand runs the job instead of starting another agent.
	EnvRole = "PPLAUNCH_ROLE"
	// EnvHostStore is "1" in the one rank that hosts the store itself (rank 0
	// under --direct, where there is no agent).
	EnvHostStore = "PPLAUNCH_HOST_STORE"

	// EnvBackend is the agent's choice of communicator backend ("tcp" or
	// "nccl"), so that every rank of a node uses the same one.
	EnvBackend = "PPLAUNCH_BACKEND"

	// RoleRank is the value of EnvRole inside a rank.
	RoleRank = "rank"

	// EnvProgress names a rank's progress file (progress.go): a small file
	// in the agent's run directory that the rank maps and overwrites in
	// place with the action it is about to run, and at the end with its
	// account of its failure.
	EnvProgress = "PPLAUNCH_PROGRESS_FILE"

	// An elastic job's (--nnodes MIN:MAX) facts for its ranks: the world
	// size of its first round, which the run's batch flags were given for
	// (a rank keeps that global batch in a world of another size); and,
	// in a world that re-formed with other nodes, the last world as
	// "NODES:SIZE" and why it changed ("node 2 was lost").
	EnvElasticBase   = "PPLAUNCH_ELASTIC_BASE_WORLD_SIZE"
	EnvElasticPrev   = "PPLAUNCH_ELASTIC_PREV_WORLD"
	EnvElasticReason = "PPLAUNCH_ELASTIC_REASON"

	// torchelastic's names for the same facts.
	EnvTERestartCount = "TORCHELASTIC_RESTART_COUNT"
	EnvTEMaxRestarts  = "TORCHELASTIC_MAX_RESTARTS"
	EnvTERunID        = "TORCHELASTIC_RUN_ID"
	EnvTEUseAgent     = "TORCHELASTIC_USE_AGENT_STORE"
)
