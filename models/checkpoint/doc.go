// Package checkpoint saves and restores training state as a directory that other
// tools can read: one safetensors shard per pipeline stage plus a JSON manifest.
//
//	root/step-000100/
//	    stage-000-of-002.safetensors   stage 0's tensors
//	    stage-001-of-002.safetensors   stage 1's tensors
//	    manifest.json                  written last: the checkpoint is complete once it exists
//
// Inside a shard, tensors are float32 and named by kind: "param/<name>" for model
// parameters and "<slot>/<name>" for optimizer state (for example "adam_m/<name>",
// "adam_v/<name>", "momentum/<name>"); every slot holds exactly the stage's
// parameter names and shapes. The manifest (see Manifest) records the format version,
// the step, the data position, the model config as the caller's own JSON object, the
// optimizer, and per stage its file, size, SHA-256 and parameter names.
//
// Every file is written atomically: a temporary file in the same directory, fsync,
// rename, fsync of the directory. In a pipeline each rank calls WriteShard for its
// stage; after a barrier one rank calls Commit, which hashes the shards and writes the
// manifest. Latest finds the newest complete checkpoint under a root, ignoring
// directories without a manifest (a save that was cut short). LoadStage loads one
// stage of the saved layout, Load the whole model, Gather any set of parameters from
// any layout (a run cut differently). Loading verifies sizes and checksums and the
// manifest against what the caller expects, and refuses any difference with a message
// naming the file and what differs. Compare matches two checkpoints tensor by tensor
// whatever stage layout each was saved with.
//
// A root of step directories is one run's: CheckWritable finds a root that cannot
// hold checkpoints before a run relies on it, Complete lists the committed steps,
// Clear removes them all (renaming them aside first, so a crash never leaves a mix
// of two runs) and CleanTemps removes the temporary files of saves that were killed.
//
// The package knows nothing of the models package: it deals in named float32 tensors.
//
// It imports only models/safetensors and must never import models.
package checkpoint
