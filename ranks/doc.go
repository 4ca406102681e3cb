// Package ranks is the worker side of a job: a rank's identity from the environment
// (agent, srun or mpirun), its connection to the store and communicator, and the
// stage loop that executes a schedule with the real model stages.
package ranks
