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
)

// Vocab is the vocabulary size: one token per byte value.
const Vocab = 256

// ValDivisor sets the held-out validation split: the last len/ValDivisor bytes of the
// corpus (10%, rounded down). Training windows never read them.
const ValDivisor = 10

// DefaultName names the embedded corpus in messages and manifests.
const DefaultName = "embedded:Isaac.Newton-Opticks.txt"

//go:embed opticks.txt.gz
var opticksGz []byte

// Corpus is a byte stream cut into a training part and a held-out validation tail.
type Corpus struct {
	name  string
	train []byte
	val   []byte
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

// Load reads a corpus from a file, or from every regular file under a directory
// (recursively, in lexical path order, so the byte stream is the same on every
// machine), concatenated. Names starting with "." (such as .git) are skipped inside a
// directory. An empty path means the embedded default.
func Load(path string) (*Corpus, error) {
	if path == "" {
		return Default()
	}
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("corpus: %w", err)
	}
	if !st.IsDir() {
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("corpus: %w", err)
		}
		return New(path, b)
	}
	var buf bytes.Buffer
	files := 0
	err = filepath.WalkDir(path, func(p string, d fs.DirEntry, err error) error {
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

// New makes a corpus from bytes; name is used in messages. The last len/ValDivisor
// bytes become the validation split.
func New(name string, b []byte) (*Corpus, error) {
	if len(b) == 0 {
		return nil, fmt.Errorf("corpus %s: empty", name)
	}
	nval := len(b) / ValDivisor
	return &Corpus{name: name, train: b[:len(b)-nval], val: b[len(b)-nval:]}, nil
}

// Name is the corpus's path, or DefaultName for the embedded one.
func (c *Corpus) Name() string { return c.name }

// TrainLen is the size of the training split in bytes.
func (c *Corpus) TrainLen() int { return len(c.train) }

// ValLen is the size of the held-out validation split in bytes.
func (c *Corpus) ValLen() int { return len(c.val) }

// Batch returns the training micro-batch number globalMicro of the given step:
// batchSize rows of seqLen tokens, row-major, and the targets (each input shifted by
// one). Row r is sample globalMicro*batchSize + r of the step, and a sample's window
// is a pure function of (seed, step, sample index): the result never depends on which
// rank asks, in which order, or how the global batch is cut into micro-batches.
func (c *Corpus) Batch(seed uint64, step, globalMicro, batchSize, seqLen int) (inputs, targets []int32, err error) {
	if err := c.check("training", len(c.train), step, globalMicro, batchSize, seqLen); err != nil {
		return nil, nil, err
	}
	windows := uint64(len(c.train) - seqLen) // starts 0..len-seqLen-1 leave room for the target
	inputs = make([]int32, batchSize*seqLen)
	targets = make([]int32, batchSize*seqLen)
	base := mix(mix(seed^0x9e3779b97f4a7c15) + uint64(step))
	for r := 0; r < batchSize; r++ {
		sample := uint64(globalMicro)*uint64(batchSize) + uint64(r)
		start, _ := bits.Mul64(mix(base+sample), windows)
		fill(inputs[r*seqLen:(r+1)*seqLen], targets[r*seqLen:(r+1)*seqLen], c.train[start:start+uint64(seqLen)+1])
	}
	return inputs, targets, nil
}

// ValWindows is how many disjoint windows of seqLen tokens (plus one target) the
// validation split holds; ValBatch walks them in order.
func (c *Corpus) ValWindows(seqLen int) int {
	if seqLen <= 0 || len(c.val) < seqLen+1 {
		return 0
	}
	return (len(c.val) - 1) / seqLen
}

// ValBatch returns validation batch number index: rows are the consecutive, disjoint
// windows index*batchSize+r of the held-out split (wrapping around after
// ValWindows(seqLen)), so every run evaluates on the same text whatever its seed.
func (c *Corpus) ValBatch(index, batchSize, seqLen int) (inputs, targets []int32, err error) {
	if err := c.check("validation", len(c.val), 0, index, batchSize, seqLen); err != nil {
		return nil, nil, err
	}
	n := c.ValWindows(seqLen)
	inputs = make([]int32, batchSize*seqLen)
	targets = make([]int32, batchSize*seqLen)
	for r := 0; r < batchSize; r++ {
		w := (index*batchSize + r) % n
		fill(inputs[r*seqLen:(r+1)*seqLen], targets[r*seqLen:(r+1)*seqLen], c.val[w*seqLen:w*seqLen+seqLen+1])
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
		return fmt.Errorf("corpus %s: %s split has %d bytes, too small for sequence length %d (needs at least %d)",
			c.name, split, n, seqLen, seqLen+1)
	}
	return nil
}

// fill copies window[:len(in)] to in and window[1:] to tgt.
func fill(in, tgt []int32, window []byte) {
	for i := range in {
		in[i] = int32(window[i])
		tgt[i] = int32(window[i+1])
	}
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
