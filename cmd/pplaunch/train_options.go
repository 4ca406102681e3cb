package main

import "github.com/pplaunch/pplaunch/runconfig"

// The training options are declared once: as the fields of trainCmd and of
// the flag structs it embeds (modelFlags, cutFlags, optimFlags, sampleFlags,
// metricsFlags). Each field is one row of the table. go-arg's tags give the
// flag, its environment variable (env:), default and help; three more tags
// give the rest:
//
//	ds:"optimizer.params.lr"  the DeepSpeed (or Megatron) key of the same meaning;
//	                          a file may not give both
//	alias:"learning_rate"     other tools' names for it: a config file key so named is
//	                          answered with the option's own name (and its DeepSpeed key)
//	same:"true"               every rank must be given the same value (a test asks
//	                          each option without it why)
//
// From the table come the flags (go-arg), the config file's keys (each flag's
// name, with underscores or dashes), the printed `config:` line and the
// checkpoint manifest's copy of it (runconfig.Effective), and the docs' option
// tables (a test compares them), and the flags every rank must be given
// alike (same:"true", which rank 0 publishes and the others compare:
// runconfig.Agreed, ranks.TrainConfig.Flags). The values' checks are ranks.TrainConfig's
// (Plan), which every rank runs, with or without an agent. Package runconfig
// reads the tags and the config file.
//
// A new option is one field with its tags; nothing else needs to know of it.
// A DeepSpeed key whose value is the option's own sets it as it is; one
// whose meaning differs (other defaults, other units) is translated in
// runconfig/deepspeed.go.

// trainOptions is the option table bound to c's fields, in declaration
// order. --config itself is not an option of the file.
func trainOptions(c *trainCmd) []runconfig.Option { return runconfig.Options(c) }
