// Package launch is the agent: it works out the node's place in the job (flags or
// Slurm's environment: Resolve), hosts or joins the rendezvous store (where the
// agents check that the flags they must share agree, and heartbeat), spawns the
// local ranks with the torchrun environment contract, tags their output,
// supervises them (fail fast, signal forwarding and job control, restarts on
// every node) and prints a root-cause summary (Run). DirectEnv gives a process
// started by srun or mpirun the same contract without an agent (--direct).
// RankEnv says whether this process is a rank (the rank's side is ranks.Run);
// RunAgent, RunProgram and RunSelf run the agent from the command line
// (entry.go); SimulatedJoin is the rendezvous of bench rendezvous' many
// simulated agents in one process.
//
// The supervision decisions (when to stop, whom to blame, when to tell the
// other nodes, whether to restart) are a pure function of events (decide.go,
// rootcause.go); attempt.go only feeds it and carries out its actions. A node's
// ranks run under one keeper (package keeper: this same executable in a hidden
// mode, a child subreaper that puts each rank in a cgroup where it can;
// keeper.go is the agent's side) so that nothing a rank started outlives it or
// the agent, and each rank publishes its progress in a small file the agent
// reads (progress.go; the writer is ranks.Progress).
//
// What the agent and its ranks agree on (the environment's names, the
// progress file's layout and failure classes, signal names) is package
// contract, which both this package and package ranks import. Slurm's host
// lists are expanded by the pure subpackage hostlist.
//
// It imports contract, store, launch/keeper and launch/hostlist (and procfs for
// per-rank memory and CPU); it must never import ranks, collective, models, schedules or bench:
// the agent starts ranks, it does not run their code.
package launch
