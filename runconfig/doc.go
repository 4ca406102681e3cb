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
// DeepSpeed ties together are checked once the world is known (batch.go).
//
// runconfig knows no command: the table's struct is the caller's. It
// imports ranks and models only for the names of their settings (the
// learning-rate schedules, the balance methods), and must never import
// launch, bench or cmd.
package runconfig
