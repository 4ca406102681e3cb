package main

import "github.com/pplaunch/pplaunch/launch"

// durationValue is the type of the subcommands' duration flags: seconds
// (--timeout 30, as torchrun takes them) or Go's form (30s, 5m).
type durationValue = launch.Duration
