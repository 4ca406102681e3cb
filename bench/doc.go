// Package bench holds benchmark drivers and their reports (tables, JSON) over the
// packages of pplaunch: transfers, training steps, pipeline overhead, launch time.
// Step times one training step of a whole model in one process (pplaunch bench
// step).
//
// It may import every package except cmd/pplaunch and launch (the agent); only
// cmd/pplaunch imports it, so no library package must ever import bench.
package bench
