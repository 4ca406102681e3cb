// Package bench holds benchmark drivers and their reports (tables, JSON) over the
// packages of pplaunch: transfers, training steps, pipeline overhead, launch time.
// Step times one training step of a whole model in one process (pplaunch bench
// step). Rendezvous forms worlds of many simulated agents on one store
// (pplaunch bench rendezvous); the agents' rendezvous comes in as a Joiner.
// ScalingPlan lays out the sizes of a scaling run, ScalingTarget says where
// they go (this machine, simulated hosts, a Slurm allocation), ScalingDriver
// runs each size's agents as real processes (the first to fail stops the
// others), ScalingRun turns one size's step records and profile into a
// ScalingRow, and ScalingReport and WriteScalingSVG print them (pplaunch
// bench scaling); ScalingRequest checks a run as asked before anything runs
// (its flags, the train flags through the train command's parser, every
// size's configuration) and runs it. RunP2P and RunAllReduce measure a
// communicator with its buffers in host or GPU memory (Memory: Host, or OnGPU
// over the GPU memory NCCLJob gives a device benchmark with its
// communicator): one driver each, whose rank jobs over either communicator
// P2PJobs and AllReduceJobs give. ExplainStep is a step's roofline on the
// H200, which Measure lays beside the measured step.
//
// It may import every package except cmd/pplaunch and launch (the agent; its
// simulated hosts, launch/netns, it may); only cmd/pplaunch imports it, so no
// library package must ever import bench.
package bench
