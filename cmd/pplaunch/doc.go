// Command pplaunch is one binary for pipeline-parallel training: the launcher
// (pplaunch --nproc 4 train), the worker each rank runs, the planner
// (pplaunch plan) and the benchmark driver (pplaunch bench ...).
//
// It holds flags and wiring: each subcommand parses its flags, checks them,
// and calls the packages that do the work (launch, ranks, schedules, bench,
// models). Nothing imports it.
package main
