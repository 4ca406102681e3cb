// Package safetensors reads and writes the safetensors format
// (https://github.com/huggingface/safetensors), so that checkpoints and --init-from
// weights are exchanged with other tools (PyTorch, JAX, numpy).
//
// A file is: an 8-byte little-endian header length N; N bytes of JSON mapping each
// tensor name to {"dtype", "shape", "data_offsets": [begin, end]} (offsets relative to
// the data section) plus an optional "__metadata__" map of strings; then the data,
// little-endian, row-major. The writer sorts tensors by element size (largest first,
// so every tensor is aligned to its element size) then by name, lays them out
// contiguously, and pads the header with spaces to a multiple of 8 bytes, as the
// reference writer does. The decoder bounds every length, rejects overlapping, gapped
// or out-of-range offsets, shapes whose size does not match their bytes, unknown
// dtypes and duplicate names.
//
// Standard library only; it must never import another package of pplaunch.
package safetensors
