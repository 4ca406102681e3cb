package data

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"runtime"

	"golang.org/x/sys/unix"
)

// llm.c's token files (dev/data/data_common.py write_datafile): a header of
// 256 little-endian int32, [0] the magic, [1] the version, [2] the number of
// tokens, then the tokens as uint16.
const (
	LLMCMagic       = 20240520
	LLMCVersion     = 1
	llmcHeaderBytes = 256 * 4
	// llmcMagicU32 marks llm.c's later files of uint32 tokens (LLaMA 3).
	llmcMagicU32 = 20240801
)

// The names nanoGPT's prepare.py scripts give their raw uint16 token files.
const (
	NanoGPTTrain = "train.bin"
	NanoGPTVal   = "val.bin"
)

// mapping is a read-only memory map of a whole file.
type mapping []byte

// mapFile maps path read-only: its pages are read as batches touch them,
// never the whole file at once.
func mapFile(path string) (mapping, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if st.Size() == 0 {
		return nil, fmt.Errorf("%s: empty", path)
	}
	if int64(int(st.Size())) != st.Size() {
		return nil, fmt.Errorf("%s: %d bytes is too large to map", path, st.Size())
	}
	b, err := unix.Mmap(int(f.Fd()), 0, int(st.Size()), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("%s: mmap: %w", path, err)
	}
	return b, nil
}

// openTokenFile maps one token file: llm.c's (by its magic) or nanoGPT's raw
// uint16 (train.bin, val.bin). Any other .bin file is refused, naming what
// its header holds.
func openTokenFile(path string) (split, mapping, error) {
	m, err := mapFile(path)
	if err != nil {
		return split{}, nil, err
	}
	s, err := tokenSplit(path, m)
	if err != nil {
		unix.Munmap(m)
		return split{}, nil, err
	}
	return s, m, nil
}

// tokenSplit reads the layout of a mapped token file.
func tokenSplit(path string, m mapping) (split, error) {
	var magic int32
	if len(m) >= 4 {
		magic = int32(binary.LittleEndian.Uint32(m))
	}
	name := filepath.Base(path)
	switch {
	case magic == LLMCMagic:
		return llmcSplit(path, m)
	case magic == llmcMagicU32:
		return split{}, fmt.Errorf("%s: an llm.c file of uint32 tokens (magic %d); only the uint16 files of GPT-2 tokens (magic %d) are read", path, magic, LLMCMagic)
	case name == NanoGPTTrain || name == NanoGPTVal:
		if len(m)%2 != 0 {
			return split{}, fmt.Errorf("%s: %d bytes is not a whole number of uint16 tokens (a nanoGPT token file holds raw little-endian uint16)", path, len(m))
		}
		return split{file: path, b: m, width: 2}, nil
	}
	return split{}, fmt.Errorf("%s: magic %d is not llm.c's %d (version %d); a nanoGPT file of raw uint16 tokens must be named %s or %s",
		path, magic, LLMCMagic, LLMCVersion, NanoGPTTrain, NanoGPTVal)
}

// llmcSplit checks an llm.c header against the file's size.
func llmcSplit(path string, m mapping) (split, error) {
	if len(m) < llmcHeaderBytes {
		return split{}, fmt.Errorf("%s: %d bytes, shorter than llm.c's %d-byte header", path, len(m), llmcHeaderBytes)
	}
	version := int32(binary.LittleEndian.Uint32(m[4:]))
	count := int64(int32(binary.LittleEndian.Uint32(m[8:])))
	if version != LLMCVersion {
		return split{}, fmt.Errorf("%s: llm.c token file version %d; only version %d (uint16 GPT-2 tokens) is read", path, version, LLMCVersion)
	}
	if want := llmcHeaderBytes + 2*count; count < 0 || int64(len(m)) != want {
		return split{}, fmt.Errorf("%s: llm.c header says %d tokens (%d bytes with the header), but the file has %d bytes: truncated or not an llm.c file",
			path, count, want, len(m))
	}
	return split{file: path, b: m[llmcHeaderBytes:], width: 2, base: llmcHeaderBytes}, nil
}

// isTokenFile says whether a path names a token file rather than text.
func isTokenFile(path string) bool { return filepath.Ext(path) == ".bin" }

// nanoGPTDir reports whether dir holds nanoGPT's train.bin and val.bin; one
// without the other is an error.
func nanoGPTDir(dir string) (bool, error) {
	has := func(name string) bool {
		st, err := os.Stat(filepath.Join(dir, name))
		return err == nil && st.Mode().IsRegular()
	}
	tr, va := has(NanoGPTTrain), has(NanoGPTVal)
	switch {
	case tr && va:
		return true, nil
	case tr || va:
		one, other := NanoGPTTrain, NanoGPTVal
		if va {
			one, other = other, one
		}
		return false, fmt.Errorf("%s holds %s but no %s: give both, or the file itself (its last tenth is then held out)", dir, one, other)
	}
	return false, nil
}

// unmapWhenUnreachable unmaps the files of a corpus once nothing refers to
// it (batches copy tokens out, so no mapped slice outlives it).
func unmapWhenUnreachable(c *Corpus, maps []mapping) {
	if len(maps) == 0 {
		return
	}
	runtime.AddCleanup(c, func(ms []mapping) {
		for _, m := range ms {
			unix.Munmap(m)
		}
	}, maps)
}
