// Package bench holds benchmark drivers and their reports (tables, JSON) over the
// packages of pplaunch: transfers, training steps, pipeline overhead, launch time.
package bench
