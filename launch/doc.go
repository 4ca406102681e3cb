// Package launch is the agent: it works out the node's place in the job (flags or
// Slurm's environment), hosts or joins the rendezvous store, spawns the local ranks
// with the torchrun environment contract, tags their output, supervises them
// (fail fast, signal forwarding, restarts) and prints a root-cause summary.
package launch
