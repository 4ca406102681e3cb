//go:build !cgo

package cbits

import "errors"

// OpenBLASSoname is the library OpenBLAS loads from.
const OpenBLASSoname = "libopenblas.so.0"

// OpenBLAS is unavailable in a build without cgo.
type OpenBLAS struct{}

// LoadOpenBLAS always fails without cgo: there is no dlopen.
func LoadOpenBLAS() (*OpenBLAS, error) {
	return nil, errors.New("load " + OpenBLASSoname + ": binary built without cgo")
}

// Config is never reached without cgo.
func (o *OpenBLAS) Config() string { return "" }

// Sgemm is never reached without cgo: LoadOpenBLAS returns no library.
func (o *OpenBLAS) Sgemm(ta, tb bool, m, n, k int, alpha float32, a []float32, lda int,
	b []float32, ldb int, beta float32, c []float32, ldc int) {
	panic("cbits: OpenBLAS without cgo")
}

// Note is never reached without cgo.
func (o *OpenBLAS) Note() string { return "" }
