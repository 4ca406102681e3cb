// Package faults is the fault suite of pplaunch: its tests build the binary
// once and run real jobs (processes, signals, sockets, files) into faults, a
// table of cases of which each asserts that the fault was detected, the
// culprit named, the exit code, that the job stopped within the bound its
// flags give (--timeout plus --grace-period), that no process of the job was
// left, that no checkpoint was lost, and, after restarts or a resume, that
// the parameters equal those of an uninterrupted run.
//
// `go test ./launch/faults` runs the cases marked fast; `make faults` (or
// `go test ./launch/faults -all`) runs every case. Adding a case is one row
// in a table (cases_*_test.go).
//
// The package holds no code but this comment and its tests. It sits above
// cmd/pplaunch (it runs the binary) and nothing imports it; its tests use
// pplaunch through the built binary, the rank contract's variable names and
// the store's client and handshake constants (store: the hostile
// cases play an outsider to the store) and the checkpoint format
// (models/checkpoint) only.
package faults
