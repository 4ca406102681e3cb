// Package cbits is a small cgo shim that dlopens native libraries at run time
// (OpenBLAS, and the NVIDIA libraries where present), so one binary builds with no
// native files and runs on CPU-only and GPU machines alike.
package cbits
