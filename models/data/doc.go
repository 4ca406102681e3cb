// Package data is the byte-level training corpus: a file, a directory of files, or the
// embedded default (Isaac Newton's Opticks, the public-domain Project Gutenberg text
// that ships in Go's source tree as src/testdata/Isaac.Newton-Opticks.txt).
//
// Every byte is a token (vocabulary 256). The last tenth (ValDivisor) of the corpus is held
// out for validation. Batches are a pure function of (seed, step, global micro-batch
// index): never of the rank layout, so a model cut into any number of stages or
// data-parallel replicas sees the same samples.
//
// Standard library only; it must never import another package of pplaunch.
package data

//go:generate sh -c "gzip -9 -n -c \"$(go env GOROOT)/src/testdata/Isaac.Newton-Opticks.txt\" > opticks.txt.gz"
