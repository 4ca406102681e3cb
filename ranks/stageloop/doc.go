// Package stageloop is the stage loop: the executor that runs one pipeline
// rank's action list (from package schedules) step after step with the real
// stages and communicator.
//
// Executor (executor.go, steprun.go, one method per action kind) posts each
// receive when the list reaches it, into a pooled buffer of the receiving
// stage's shape (bufpool.go), and waits for it only in the compute that needs
// it; sends go out without blocking compute and give their tensors back to
// the pool once done; gradients are accumulated over the step's micro-batches
// in global micro-batch order; every action gets a timestamp (StepResult's
// spans), so the measured timeline can be laid beside the simulated one.
// messagekinds.go maps a transfer action to its wire tag's kind and chunk,
// and states every message of a step for the shape check.
//
// Mover (mover.go) moves tensors through the communicator: host tensors
// directly, the communicator reading and writing their values; device tensors
// through pinned host staging, copied on the backend's copy stream, a send
// going on the wire from a goroutine of its own once its copy is done; a
// communicator of device memory (NCCL) gets device tensors as they are.
//
// stageloop imports schedules, collective and models; never ranks, which
// imports it.
package stageloop
