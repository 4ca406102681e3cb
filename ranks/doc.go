// Package ranks is the worker side of a job: a rank's identity from the environment
// (agent, srun or mpirun), its connection to the store and communicator, and the
// stage loop that executes a schedule with the real model stages.
//
// Executor runs one pipeline rank's action list (from package schedules) step
// after step: receives posted into reused buffers, sends that do not block
// compute, gradients accumulated in global micro-batch order, and a timestamp
// for every action. Train is the training job on a pp × dp mesh: data-parallel
// gradient exchange as soon as a stage's last backward is done, tied
// embeddings between the first and last stage, a global gradient norm combined
// in a canonical order, the optimizer step, validation, checkpoints and
// resumption, and rank 0's per-step record (loss, throughput, measured and
// predicted bubble, peak activations, the merged timeline). TrainConfig.Plan
// checks a configuration for a world size without effects, so the agent can
// refuse bad flags before any rank starts; Job.Stop lets the ranks agree on a
// step after which to checkpoint and stop early (preemption).
//
// It imports schedules, collective, models and ranks/store; it must never
// import launch, bench or cmd/pplaunch (they start or drive ranks).
package ranks
