package data

import (
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// writeU16 writes tokens as raw little-endian uint16, as nanoGPT's prepare.py does
// (np.array(ids, dtype=np.uint16).tofile).
func writeU16(t *testing.T, path string, header []int32, tokens []uint16) {
	t.Helper()
	b := make([]byte, 0, 4*len(header)+2*len(tokens))
	for _, h := range header {
		b = binary.LittleEndian.AppendUint32(b, uint32(h))
	}
	for _, v := range tokens {
		b = binary.LittleEndian.AppendUint16(b, v)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// llmcHeader is llm.c's header: magic, version, token count, then zeros.
func llmcHeader(magic, version, count int32) []int32 {
	h := make([]int32, 256)
	h[0], h[1], h[2] = magic, version, count
	return h
}

// pattern is a token stream whose every token tells its position: i mod 40009
// (a prime, so windows far apart differ), below 50257.
func pattern(n int) []uint16 {
	ts := make([]uint16, n)
	for i := range ts {
		ts[i] = uint16(i % 40009)
	}
	return ts
}

// windowOf checks that in/tgt are a window of want (inputs then the next
// token) and returns its start.
func windowOf(t *testing.T, what string, in, tgt []int32, want []uint16) int {
	t.Helper()
	start := slices.IndexFunc(want, func(v uint16) bool { return int32(v) == in[0] })
	if start < 0 || start+len(in) >= len(want)+1 {
		t.Fatalf("%s: window starting %d is not in the split", what, in[0])
	}
	for i := range in {
		if in[i] != int32(want[start+i]) || tgt[i] != int32(want[start+i+1]) {
			t.Fatalf("%s: token %d of the window is %d->%d, want %d->%d", what, i, in[i], tgt[i], want[start+i], want[start+i+1])
		}
	}
	return start
}

func TestNanoGPTDirectory(t *testing.T) {
	dir := t.TempDir()
	train, val := pattern(5000), pattern(7000)[5000:]
	writeU16(t, filepath.Join(dir, NanoGPTTrain), nil, train)
	writeU16(t, filepath.Join(dir, NanoGPTVal), nil, val)
	// nanoGPT's directories also hold the text and its scripts: not read.
	os.WriteFile(filepath.Join(dir, "input.txt"), []byte("some text"), 0o644)
	c, err := Open(dir, 50257)
	if err != nil {
		t.Fatal(err)
	}
	if c.TrainLen() != 5000 || c.ValLen() != 2000 {
		t.Fatalf("splits %d/%d tokens, want the files' 5000/2000", c.TrainLen(), c.ValLen())
	}
	for step := range 20 {
		in, tgt, err := c.Batch(3, step, 1, 4, 32)
		if err != nil {
			t.Fatal(err)
		}
		for r := range 4 {
			windowOf(t, fmt.Sprintf("step %d row %d", step, r), in[r*32:(r+1)*32], tgt[r*32:(r+1)*32], train)
		}
	}
	in, tgt, err := c.ValBatch(1, 2, 32)
	if err != nil {
		t.Fatal(err)
	}
	// Validation windows 2 and 3: consecutive, from val.bin.
	if s := windowOf(t, "validation", in[:32], tgt[:32], val); s != 64 {
		t.Fatalf("validation batch 1 starts at token %d of val.bin, want 64", s)
	}
	// The same (seed, step, micro-batch) from another opening of the files.
	c2, err := Open(dir, 50257)
	if err != nil {
		t.Fatal(err)
	}
	a, _, _ := c.Batch(9, 4, 2, 3, 16)
	b, _, _ := c2.Batch(9, 4, 2, 3, 16)
	whole, _, _ := c2.Batch(9, 4, 0, 9, 16) // micro-batch 2 of 3 is rows 6..8 of one of 9
	if !slices.Equal(a, b) || !slices.Equal(a, whole[6*16:]) {
		t.Fatal("batches are not a function of (seed, step, micro-batch) alone")
	}

	half := t.TempDir()
	writeU16(t, filepath.Join(half, NanoGPTTrain), nil, train)
	if _, err := Open(half, 50257); err == nil || !strings.Contains(err.Error(), "holds train.bin but no val.bin") {
		t.Fatalf("train.bin alone in a directory: %v", err)
	}
	// One file: its last tenth is held out, as for text.
	one, err := Open(filepath.Join(dir, NanoGPTTrain), 50257)
	if err != nil {
		t.Fatal(err)
	}
	if one.TrainLen() != 4500 || one.ValLen() != 500 {
		t.Fatalf("train.bin alone split %d/%d, want 4500/500", one.TrainLen(), one.ValLen())
	}
	in, tgt, err = one.ValBatch(0, 1, 8)
	if err != nil || windowOf(t, "single-file validation", in, tgt, train) != 4500 {
		t.Fatalf("single-file validation: %v", err)
	}
	odd := filepath.Join(t.TempDir(), NanoGPTTrain)
	os.WriteFile(odd, []byte{1, 2, 3}, 0o644)
	if _, err := Open(odd, 50257); err == nil || !strings.Contains(err.Error(), odd) || !strings.Contains(err.Error(), "3 bytes is not a whole number of uint16 tokens") {
		t.Fatalf("odd-sized train.bin: %v", err)
	}
}

func TestLLMCFile(t *testing.T) {
	dir := t.TempDir()
	tokens := pattern(3000)
	path := filepath.Join(dir, "tiny_train.bin")
	writeU16(t, path, llmcHeader(LLMCMagic, LLMCVersion, 3000), tokens)
	c, err := Open(path, 50257)
	if err != nil {
		t.Fatal(err)
	}
	if c.TrainLen() != 2700 || c.ValLen() != 300 {
		t.Fatalf("split %d/%d, want 2700/300", c.TrainLen(), c.ValLen())
	}
	in, tgt, err := c.Batch(1, 0, 0, 2, 64)
	if err != nil {
		t.Fatal(err)
	}
	windowOf(t, "llm.c training window", in[:64], tgt[:64], tokens[:2700])
	in, tgt, _ = c.ValBatch(0, 1, 10)
	if s := windowOf(t, "llm.c validation window", in, tgt, tokens); s != 2700 {
		t.Fatalf("validation starts at token %d, want 2700 (the header is not a token)", s)
	}

	for _, bad := range []struct {
		name   string
		header []int32
		n      int
		want   string
	}{
		{"magic.bin", llmcHeader(12345, 1, 100), 100, "magic 12345 is not llm.c's 20240520 (version 1); a nanoGPT file of raw uint16 tokens must be named train.bin or val.bin"},
		{"version.bin", llmcHeader(LLMCMagic, 2, 100), 100, "llm.c token file version 2; only version 1"},
		{"short.bin", llmcHeader(LLMCMagic, 1, 100), 99, "llm.c header says 100 tokens (1224 bytes with the header), but the file has 1222 bytes"},
		{"long.bin", llmcHeader(LLMCMagic, 1, 100), 101, "but the file has 1226 bytes"},
		{"uint32.bin", llmcHeader(20240801, 7, 100), 200, "an llm.c file of uint32 tokens"},
		{"header.bin", llmcHeader(LLMCMagic, 1, 0)[:100], 0, "shorter than llm.c's 1024-byte header"},
	} {
		p := filepath.Join(dir, bad.name)
		writeU16(t, p, bad.header, pattern(bad.n))
		if _, err := Open(p, 50257); err == nil || !strings.Contains(err.Error(), p+":") || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%s: %v, want an error naming the file and %q", bad.name, err, bad.want)
		}
	}
	empty := filepath.Join(dir, "empty.bin")
	os.WriteFile(empty, nil, 0o644)
	if _, err := Open(empty, 50257); err == nil || !strings.Contains(err.Error(), empty+": empty") {
		t.Errorf("empty file: %v", err)
	}
}

// A token at or above the vocabulary is an error naming the file and the
// byte offset: at opening within the first tokens of a split, and from the
// batch that reaches it beyond them.
func TestTokenOutsideVocabulary(t *testing.T) {
	dir := t.TempDir()
	tokens := make([]uint16, 1000)
	for i := range tokens {
		tokens[i] = uint16(i % 200)
	}
	tokens[700] = 300
	path := filepath.Join(dir, "early.bin")
	writeU16(t, path, llmcHeader(LLMCMagic, 1, 1000), tokens)
	want := fmt.Sprintf("%s: token 300 at byte offset %d (token 700 of the split) is outside the model's vocabulary of 256", path, 1024+2*700)
	if _, err := Open(path, 256); err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("early bad token: %v, want %q", err, want)
	}
	if _, err := Open(path, 301); err != nil {
		t.Fatalf("token 300 within a vocabulary of 301: %v", err)
	}

	// Beyond the checked prefix of the training split: every token from
	// 70000 on is out of range; the validation split is clean.
	n := 100000
	late := make([]uint16, n)
	for i := 70000; i < 90000; i++ {
		late[i] = 999
	}
	lpath := filepath.Join(dir, NanoGPTTrain)
	writeU16(t, lpath, nil, late)
	c, err := Open(lpath, 500)
	if err != nil {
		t.Fatalf("the first %d tokens are in range: %v", checkPrefix, err)
	}
	for step := 0; ; step++ {
		if step == 1000 {
			t.Fatal("no batch reached the tokens out of range")
		}
		_, _, err := c.Batch(1, step, 0, 8, 64)
		if err == nil {
			continue
		}
		var tok, off, idx int
		msg := err.Error()
		i := strings.Index(msg, "token ")
		if _, perr := fmt.Sscanf(msg[i:], "token %d at byte offset %d (token %d", &tok, &off, &idx); perr != nil || !strings.Contains(msg, lpath) {
			t.Fatalf("step %d: %v: want the file and the offset", step, err)
		}
		if tok != 999 || off != 2*idx || late[idx] != 999 {
			t.Fatalf("step %d: %v names a token that is not there (file holds %d at %d)", step, err, late[idx], idx)
		}
		break
	}
}

// Opening a large token file maps it: the heap does not grow by its size.
func TestTokenFileIsMapped(t *testing.T) {
	path := filepath.Join(t.TempDir(), NanoGPTTrain)
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	const size = 256 << 20 // sparse: no disk is used
	if err := f.Truncate(size); err != nil {
		t.Fatal(err)
	}
	f.Close()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	c, err := Open(path, 50257)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.Batch(1, 0, 0, 4, 1024); err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&after)
	if grew := int64(after.HeapAlloc) - int64(before.HeapAlloc); grew > 16<<20 {
		t.Fatalf("opening a %d MiB token file grew the heap by %d MiB: it was read, not mapped", size>>20, grew>>20)
	}
	if n := size / 2; c.TrainLen() != n-n/ValDivisor {
		t.Fatalf("train split %d tokens", c.TrainLen())
	}
	runtime.KeepAlive(c)
}

// numpy reads the files the tests write as their formats' own tools do: a
// nanoGPT file with np.memmap(dtype=np.uint16), an llm.c file as 256 int32
// then uint16 (llm.c's dev/data/data_common.py).
func TestTokenFilesReadByNumpy(t *testing.T) {
	if err := exec.Command("python3", "-c", "import numpy").Run(); err != nil {
		t.Skipf("python3 with numpy is not installed (%v): the files are not read back by numpy", err)
	}
	dir := t.TempDir()
	tokens := pattern(2000)
	nano, llmc := filepath.Join(dir, NanoGPTTrain), filepath.Join(dir, "x_train.bin")
	writeU16(t, nano, nil, tokens)
	writeU16(t, llmc, llmcHeader(LLMCMagic, 1, 2000), tokens)
	script := `import sys, numpy as np
a = np.memmap(sys.argv[1], dtype=np.uint16, mode="r")
with open(sys.argv[2], "rb") as f:
    h = np.frombuffer(f.read(256 * 4), dtype=np.int32)
    b = np.frombuffer(f.read(), dtype=np.uint16)
assert h[0] == 20240520 and h[1] == 1 and h[2] == len(b), h[:3]
print(len(a), int(a.astype(np.int64).sum()), int(a[1234]), len(b), int(b.astype(np.int64).sum()))`
	out, err := exec.Command("python3", "-c", script, nano, llmc).CombinedOutput()
	if err != nil {
		t.Fatalf("numpy: %v\n%s", err, out)
	}
	var sum int64
	for _, v := range tokens {
		sum += int64(v)
	}
	if want := fmt.Sprintf("2000 %d %d 2000 %d\n", sum, tokens[1234], sum); string(out) != want {
		t.Fatalf("numpy read %q, want %q", out, want)
	}
	for _, p := range []string{nano, llmc} {
		c, err := Open(p, 50257)
		if err != nil {
			t.Fatal(err)
		}
		if c.TrainLen()+c.ValLen() != 2000 {
			t.Fatalf("%s: %d tokens", p, c.TrainLen()+c.ValLen())
		}
	}
}
