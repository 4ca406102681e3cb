// Package ranks is the worker side of a job: a rank's identity from the environment
// (agent, srun or mpirun), its connection to the store and communicator, and the
// trainer that drives the stage loop (package ranks/stageloop) with the real
// model stages.
//
// Run (run.go) is a rank's life in a job: identity, the store, the job, the
// last barrier, and its exit code (0, 1, 2, or 128+signal), with progress
// published for the agent; one signal watcher per rank (signals.go) ends the
// job at the first SIGINT, SIGTERM or SIGHUP and feeds Preemption.
// TrainConfig.ForWorld and Relayout (elastic_world.go) lay an elastic job's
// first global batch out on the world it re-formed as.
//
// The stage loop, which executes one pipeline rank's action list, is
// package ranks/stageloop; the trainer drives its Executor each step and
// moves its other tensors through the Executor's Mover.
// Train (train.go) is the training job on a pp × dp mesh: the data-parallel
// gradient exchange as a chunked reduce-scatter and all-gather started as soon
// as a stage's last backward is done (dpreduce.go), tied embeddings between the
// first and last stage (tied.go), a global gradient norm and the losses
// combined exactly (scalars.go), the optimizer step, validation (eval.go),
// checkpoints and resumption (ckpt.go), and rank 0's per-step record (loss,
// throughput, measured and predicted bubble, peak activations, the merged
// timeline; report.go), of which rank 0 keeps only running totals
// (summary.go), printed at the end by Result.WriteSummary (summary_text.go);
// pplaunch sample reads a checkpoint through SampleSource (sample_checkpoint.go);
// sample_options.go holds the sampling options and sample_source.go where
// a sample's model and parameters come from.
// The trainer is composed of parts that own their state: rankJob (place.go),
// rankStages (stages.go), stepLoop (steploop.go), checkpointer (ckpt.go),
// evaluator (eval.go), reporter (report.go) and rebalancer (rebalance_run.go).
// TrainConfig.Plan (config.go) checks a configuration for a
// world size without effects, so the agent can refuse bad flags before any
// rank starts; Job.Stop lets the ranks agree on a step after which to
// checkpoint and stop early, on the signals Preemption watches (preempt.go).
// faulthooks.go holds the test-only hooks that stall, kill or hold a rank.
// With TrainConfig.Profile every rank times its blocks' passes and rank 0
// gathers a plan.Profile (profilecollect.go); the planner (package plan)
// predicts layouts from it, and TrainConfig.Plan checks a layout with the
// planner's rules (plan.MicroFitsDP, plan.CheckZero). With TrainConfig.Rebalance the ranks time
// their blocks while they train (rebalance_meter.go), agree on the costs,
// decide a new cut with a pure function (DecideRecut, rebalance.go) and move
// the blocks between ranks at a step boundary (rebalance_move.go);
// slowhook.go holds the test-only hook that slows a rank's blocks.
//
// ranks imports ranks/stageloop, schedules, plan, collective, models, store and contract; it must never
// import launch, bench or cmd (nothing upward), and the decisions it can make
// without effects (Plan, the schedule, the summary) stay pure.
package ranks
