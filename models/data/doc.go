// Package data is the training corpus: text (a file, a directory of files, or
// the embedded default, Isaac Newton's Opticks, the public-domain Project
// Gutenberg text that ships in Go's source tree as
// src/testdata/Isaac.Newton-Opticks.txt), a token per byte; or the token files
// nanoGPT and llm.c users have (raw uint16 train.bin/val.bin, llm.c's .bin with
// its 1 KiB header), memory-mapped and never read whole.
//
// A corpus not already split holds out its last tenth (ValDivisor) for
// validation. Batches are a pure function of (seed, step, global micro-batch
// index): never of the rank layout, so a model cut into any number of stages
// or data-parallel replicas sees the same samples. Every token a batch returns
// is checked against the model's vocabulary.
//
// Standard library and golang.org/x/sys only; it must never import another
// package of pplaunch.
package data

//go:generate sh -c "gzip -9 -n -c \"$(go env GOROOT)/src/testdata/Isaac.Newton-Opticks.txt\" > opticks.txt.gz"
