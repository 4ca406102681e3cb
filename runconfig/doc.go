// Package runconfig reads the training options' table and the config file
// that sets them: `pplaunch train --config FILE`.
//
// The table is a struct's fields with go-arg's tags and two of its own, ds:
// (the DeepSpeed key of the same meaning) and alias: (other tools' names);
// Options binds it (option.go), Effective writes the values as a config
// file that reads back as the same run. Read takes a JSON or YAML file
// (yaml.go) of the options' own names and DeepSpeed's (or Megatron's) keys:
// DeepSpeed's schema is decoded strictly, every unknown key answered with
// the nearest known one (schema.go, suggest.go); a DeepSpeed key whose value
// is an option's own sets it as its ds: tag says, the others (optimizer
// defaults by type, the warmup schedulers, the partition method, activation
// checkpointing) are translated by hand (deepspeed.go); the batch sizes
// DeepSpeed ties together are checked once the world is known (batch.go,
// with WorldDP the data-parallel width they are reckoned with).
//
// Two groups of the table's rows are declared here, as they are shared by
// several commands: ModelFlags (the preset and its overrides, resolved to
// a checked models.Config) and CutFlags (the cut into stages: explicit,
// by a balance method, or by a profile's block times through plan), in
// model.go. CheckFiles (files.go) checks before any rank starts the files
// a run reads (its corpus, --init-from, which must not be a pplaunch
// checkpoint) and the directories rank 0 writes into.
//
// runconfig knows no command: the table's struct is the caller's. It
// imports ranks and models (+ checkpoint, for --init-from's check) for
// their settings and checks, plan for the profile cut, and must never
// import launch, bench or cmd.
package runconfig
