// Package launch is the agent: it works out the node's place in the job (flags or
// Slurm's environment: Resolve), hosts or joins the rendezvous store, spawns the
// local ranks with the torchrun environment contract, tags their output,
// supervises them (fail fast, signal forwarding, restarts on every node) and
// prints a root-cause summary (Run). DirectEnv gives a process started by srun
// or mpirun the same contract without an agent (--direct).
//
// The contract's variable names are constants in package ranks/store, which
// both this package and package ranks (the rank side) import. Slurm's host
// lists are expanded by the pure subpackage hostlist.
//
// It imports ranks/store and launch/hostlist (and procfs for per-rank memory
// and CPU); it must never import ranks, collective, models, schedules or bench:
// the agent starts ranks, it does not run their code.
package launch
