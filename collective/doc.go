// Package collective gives each rank point-to-point transfers and group
// operations (all-reduce, broadcast, barrier) over a pluggable backend: TCP (any
// machine), in-memory (goroutine ranks, for tests) and NCCL (GPU). Every message is
// framed and checked; every wait has a deadline.
package collective
