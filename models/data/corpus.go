package data

import (
	"bytes"
	"compress/gzip"
	_ "embed"
	"fmt"
	"io"
	"io/fs"
	"math/bits"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// Vocab is the vocabulary of text: one token per byte value.
const Vocab = 256

// ValDivisor sets the held-out validation split of a corpus that is not
// already split: the last len/ValDivisor tokens (10%, rounded down).
// Training windows never read them.
const ValDivisor = 10

// checkPrefix is how many tokens of each split Open checks against the
// vocabulary, so that a file tokenised for a larger one is refused at the
// start without reading the whole file; Batch and ValBatch check every token
// they return.
const checkPrefix = 1 << 16

// DefaultName names the embedded corpus in messages and manifests.
const DefaultName = "embedded:Isaac.Newton-Opticks.txt"

//go:embed opticks.txt.gz
var opticksGz []byte

// Corpus is a token stream cut into a training part and a held-out
// validation part: text (a token per byte) or a token file.
type Corpus struct {
	name  string
	train split
	val   split
	vocab int
	// presplit: the validation split is a file of its own (nanoGPT's val.bin).
	presplit bool
}

// Default returns the embedded corpus (Newton's Opticks, about 567 kB).
func Default() (*Corpus, error) {
	zr, err := gzip.NewReader(bytes.NewReader(opticksGz))
	if err != nil {
		return nil, fmt.Errorf("corpus %s: %w", DefaultName, err)
	}
	b, err := io.ReadAll(zr)
	if err != nil {
		return nil, fmt.Errorf("corpus %s: %w", DefaultName, err)
	}
	return New(DefaultName, b)
}

// Load is Open for a byte-level model (vocabulary 256).
func Load(path string) (*Corpus, error) { return Open(path, Vocab) }

// Open reads the corpus path names for a model of vocab tokens:
//
//   - a directory holding nanoGPT's train.bin and val.bin (raw little-endian
//     uint16 tokens): they are the two splits;
//   - a .bin file: llm.c's token file (a 256 × int32 header, magic 20240520,
//     version 1, the token count; then uint16 tokens), or nanoGPT's raw
//     train.bin or val.bin alone, split as text is;
//   - any other file: text, a token per byte;
//   - any other directory: the text of every regular file under it
//     (recursively, in lexical path order, so the stream is the same on every
//     machine), concatenated; names starting with "." (such as .git) are
//     skipped;
//   - "": the embedded text.
//
// Token files are memory-mapped, never read whole. A token at or above vocab
// is an error naming the file and its byte offset.
func Open(path string, vocab int) (*Corpus, error) {
	if vocab < 1 {
		return nil, fmt.Errorf("corpus %s: vocabulary %d must be positive", path, vocab)
	}
	c, err := open(path)
	if err != nil {
		return nil, err
	}
	c.vocab = vocab
	for _, s := range []split{c.train, c.val} {
		if err := s.check(0, min(s.len(), checkPrefix), vocab); err != nil {
			return nil, err // it names the file
		}
	}
	return c, nil
}

func open(path string) (*Corpus, error) {
	if path == "" {
		return Default()
	}
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("corpus: %w", err)
	}
	if st.IsDir() {
		if nano, err := nanoGPTDir(path); err != nil {
			return nil, fmt.Errorf("corpus: %w", err)
		} else if nano {
			return openNanoGPTDir(path)
		}
	} else if isTokenFile(path) {
		s, m, err := openTokenFile(path)
		if err != nil {
			return nil, fmt.Errorf("corpus: %w", err)
		}
		c, err := newSplit(path, s)
		if err != nil {
			unix.Munmap(m)
			return nil, err
		}
		unmapWhenUnreachable(c, []mapping{m})
		return c, nil
	}
	return openText(path, st.IsDir())
}

// openText reads a text file, or the text of every regular file under a
// directory, as bytes.
func openText(path string, dir bool) (*Corpus, error) {
	if !dir {
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("corpus: %w", err)
		}
		return New(path, b)
	}
	var buf bytes.Buffer
	files := 0
	err := filepath.WalkDir(path, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p != path && strings.HasPrefix(d.Name(), ".") {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if d.IsDir() {
			return nil
		}
		// Follow a link to a file; links to directories are not walked (no cycles).
		info, err := os.Stat(p)
		if err != nil {
			return err
		}
		if !info.Mode().IsRegular() {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		buf.Write(b)
		files++
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("corpus %s: %w", path, err)
	}
	if files == 0 {
		return nil, fmt.Errorf("corpus %s: no regular files under the directory", path)
	}
	return New(path, buf.Bytes())
}

// New makes a corpus of text from bytes, a token per byte; name is used in
// messages. The last len/ValDivisor bytes become the validation split.
func New(name string, b []byte) (*Corpus, error) {
	c, err := newSplit(name, split{file: name, b: b, width: 1})
	if c != nil {
		c.vocab = Vocab
	}
	return c, err
}

// newSplit cuts one stream of tokens into the two splits.
func newSplit(name string, s split) (*Corpus, error) {
	if s.len() == 0 {
		return nil, fmt.Errorf("corpus %s: empty", name)
	}
	n := s.len()
	nval := n / ValDivisor
	return &Corpus{name: name, train: s.sub(0, n-nval), val: s.sub(n-nval, n), vocab: 1 << 16}, nil
}

// openNanoGPTDir maps a directory's train.bin and val.bin as the two splits.
func openNanoGPTDir(dir string) (*Corpus, error) {
	var maps []mapping
	var splits [2]split
	for i, name := range []string{NanoGPTTrain, NanoGPTVal} {
		s, m, err := openTokenFile(filepath.Join(dir, name))
		if err != nil {
			for _, m := range maps {
				unix.Munmap(m)
			}
			return nil, fmt.Errorf("corpus: %w", err)
		}
		splits[i], maps = s, append(maps, m)
	}
	c := &Corpus{name: dir, train: splits[0], val: splits[1], vocab: 1 << 16, presplit: true}
	unmapWhenUnreachable(c, maps)
	return c, nil
}

// Name is the corpus's path, or DefaultName for the embedded one.
func (c *Corpus) Name() string { return c.name }

// Unit names what a token is: "bytes" of text, or "tokens" of a token file.
func (c *Corpus) Unit() string {
	if c.train.width == 1 {
		return "bytes"
	}
	return "tokens"
}

// Presplit reports whether the validation split is a file of its own rather
// than the last tenth of the corpus.
func (c *Corpus) Presplit() bool { return c.presplit }

// Vocab is the vocabulary the corpus's tokens are checked against.
func (c *Corpus) Vocab() int { return c.vocab }

// TrainLen is the size of the training split in tokens (bytes of text).
func (c *Corpus) TrainLen() int { return c.train.len() }

// ValLen is the size of the held-out validation split in tokens.
func (c *Corpus) ValLen() int { return c.val.len() }

// Batch returns the training micro-batch number globalMicro of the given step:
// batchSize rows of seqLen tokens, row-major, and the targets (each input shifted by
// one). Row r is sample globalMicro*batchSize + r of the step, and a sample's window
// is a pure function of (seed, step, sample index): the result never depends on which
// rank asks, in which order, or how the global batch is cut into micro-batches.
func (c *Corpus) Batch(seed uint64, step, globalMicro, batchSize, seqLen int) (inputs, targets []int32, err error) {
	if err := c.check("training", c.train.len(), step, globalMicro, batchSize, seqLen); err != nil {
		return nil, nil, err
	}
	windows := uint64(c.train.len() - seqLen) // starts 0..len-seqLen-1 leave room for the target
	inputs = make([]int32, batchSize*seqLen)
	targets = make([]int32, batchSize*seqLen)
	base := mix(mix(seed^0x9e3779b97f4a7c15) + uint64(step))
	for r := 0; r < batchSize; r++ {
		sample := uint64(globalMicro)*uint64(batchSize) + uint64(r)
		start, _ := bits.Mul64(mix(base+sample), windows)
		if err := c.train.fill(inputs[r*seqLen:(r+1)*seqLen], targets[r*seqLen:(r+1)*seqLen], int(start), c.vocab); err != nil {
			return nil, nil, err // it names the file
		}
	}
	return inputs, targets, nil
}

// ValWindows is how many disjoint windows of seqLen tokens (plus one target) the
// validation split holds; ValBatch walks them in order.
func (c *Corpus) ValWindows(seqLen int) int {
	if seqLen <= 0 || c.val.len() < seqLen+1 {
		return 0
	}
	return (c.val.len() - 1) / seqLen
}

// ValBatch returns validation batch number index: rows are the consecutive, disjoint
// windows index*batchSize+r of the held-out split (wrapping around after
// ValWindows(seqLen)), so every run evaluates on the same text whatever its seed.
func (c *Corpus) ValBatch(index, batchSize, seqLen int) (inputs, targets []int32, err error) {
	if err := c.check("validation", c.val.len(), 0, index, batchSize, seqLen); err != nil {
		return nil, nil, err
	}
	n := c.ValWindows(seqLen)
	inputs = make([]int32, batchSize*seqLen)
	targets = make([]int32, batchSize*seqLen)
	for r := 0; r < batchSize; r++ {
		w := (index*batchSize + r) % n
		if err := c.val.fill(inputs[r*seqLen:(r+1)*seqLen], targets[r*seqLen:(r+1)*seqLen], w*seqLen, c.vocab); err != nil {
			return nil, nil, err
		}
	}
	return inputs, targets, nil
}

func (c *Corpus) check(split string, n, step, index, batchSize, seqLen int) error {
	switch {
	case seqLen <= 0:
		return fmt.Errorf("corpus %s: sequence length %d must be positive", c.name, seqLen)
	case batchSize <= 0:
		return fmt.Errorf("corpus %s: batch size %d must be positive", c.name, batchSize)
	case uint64(batchSize)*uint64(seqLen) > 1<<31:
		return fmt.Errorf("corpus %s: batch %d x sequence %d is too large", c.name, batchSize, seqLen)
	case step < 0 || index < 0:
		return fmt.Errorf("corpus %s: negative step %d or batch index %d", c.name, step, index)
	case n < seqLen+1:
		return fmt.Errorf("corpus %s: %s split has %d %s, too small for sequence length %d (needs at least %d)",
			c.name, split, n, c.Unit(), seqLen, seqLen+1)
	}
	return nil
}

// mix is SplitMix64's finaliser: a fixed bijection that scatters nearby keys, so the
// sample windows are stable across Go versions (unlike math/rand's generators).
func mix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}
