package data

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
)

func TestDefaultIsGoroot(t *testing.T) {
	c, err := Default()
	if err != nil {
		t.Fatal(err)
	}
	src := filepath.Join(runtime.GOROOT(), "src", "testdata", "Isaac.Newton-Opticks.txt")
	want, err := os.ReadFile(src)
	if err != nil {
		t.Skipf("cannot compare with the Go installation's copy: %v", err)
	}
	got := append(slices.Clone(c.train.b), c.val.b...)
	if !bytes.Equal(got, want) {
		t.Fatalf("embedded corpus (%d bytes) differs from %s (%d bytes); rerun go generate", len(got), src, len(want))
	}
	if c.ValLen() != len(want)/ValDivisor || c.TrainLen()+c.ValLen() != len(want) {
		t.Fatalf("split %d+%d of %d bytes", c.TrainLen(), c.ValLen(), len(want))
	}
}

func TestBatchDeterministicAndShifted(t *testing.T) {
	c, err := Default()
	if err != nil {
		t.Fatal(err)
	}
	in1, tg1, err := c.Batch(7, 3, 5, 4, 64)
	if err != nil {
		t.Fatal(err)
	}
	in2, tg2, _ := c.Batch(7, 3, 5, 4, 64)
	if !slices.Equal(in1, in2) || !slices.Equal(tg1, tg2) {
		t.Fatal("same (seed, step, micro) gave different batches")
	}
	if len(in1) != 4*64 || len(tg1) != 4*64 {
		t.Fatalf("lengths %d, %d; want %d", len(in1), len(tg1), 4*64)
	}
	for r := 0; r < 4; r++ {
		row, trow := in1[r*64:(r+1)*64], tg1[r*64:(r+1)*64]
		if !slices.Equal(row[1:], trow[:63]) {
			t.Fatalf("row %d: targets are not inputs shifted by one", r)
		}
		// The window must be real text from the training split.
		w := make([]byte, 65)
		for i := range row {
			w[i] = byte(row[i])
		}
		w[64] = byte(trow[63])
		if !bytes.Contains(c.train.b, w) {
			t.Fatalf("row %d is not a window of the training split", r)
		}
	}
	for _, other := range [][3]int{{8, 3, 5}, {7, 4, 5}, {7, 3, 6}} {
		in3, _, _ := c.Batch(uint64(other[0]), other[1], other[2], 4, 64)
		if slices.Equal(in1, in3) {
			t.Errorf("(seed, step, micro)=%v gave the same batch as (7, 3, 5)", other)
		}
	}
}

// The samples of a step depend only on their global index: cutting the same global
// batch into micro-batches differently, or asking in another order (as ranks do),
// gives the same rows.
func TestBatchIndependentOfLayoutAndOrder(t *testing.T) {
	c, err := Default()
	if err != nil {
		t.Fatal(err)
	}
	const seq, step, seed = 16, 9, 42
	whole, wholeT, err := c.Batch(seed, step, 0, 8, seq)
	if err != nil {
		t.Fatal(err)
	}
	// 4 micro-batches of 2, fetched in reverse order.
	var parts, partsT [4][]int32
	for m := 3; m >= 0; m-- {
		parts[m], partsT[m], err = c.Batch(seed, step, m, 2, seq)
		if err != nil {
			t.Fatal(err)
		}
	}
	if got := slices.Concat(parts[:]...); !slices.Equal(got, whole) {
		t.Fatal("4x2 micro-batches differ from 1x8")
	}
	if got := slices.Concat(partsT[:]...); !slices.Equal(got, wholeT) {
		t.Fatal("4x2 micro-batch targets differ from 1x8")
	}
}

func TestSplitsDisjoint(t *testing.T) {
	// Each byte's position is encoded in the text, so a window shows where it came from.
	n := 5000
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i % 251)
	}
	c, err := New("synthetic", b)
	if err != nil {
		t.Fatal(err)
	}
	if c.TrainLen() != 4500 || c.ValLen() != 500 {
		t.Fatalf("split %d/%d, want 4500/500", c.TrainLen(), c.ValLen())
	}
	// Training windows: every byte (inputs and targets) must come from the first 4500.
	// Mark the validation tail with a value training bytes never take.
	marked := slices.Clone(b)
	for i := 4500; i < n; i++ {
		marked[i] = 255
	}
	cm, _ := New("marked", marked)
	for step := 0; step < 50; step++ {
		in, tg, err := cm.Batch(1, step, 0, 16, 32)
		if err != nil {
			t.Fatal(err)
		}
		if slices.Contains(in, 255) || slices.Contains(tg, 255) {
			t.Fatalf("step %d: a training window reached into the validation split", step)
		}
	}
	// Validation windows: only bytes from the tail, disjoint, in order.
	for i := 0; i < 4500; i++ {
		marked[i] = 255
	}
	for i := 4500; i < n; i++ {
		marked[i] = b[i]
	}
	cv, _ := New("marked", marked)
	if w := cv.ValWindows(32); w != (500-1)/32 {
		t.Fatalf("ValWindows(32) = %d", w)
	}
	in, tg, err := cv.ValBatch(0, cv.ValWindows(32), 32)
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(in, 255) || slices.Contains(tg, 255) {
		t.Fatal("a validation window reached into the training split")
	}
	for i, v := range in {
		if want := int32(b[4500+i]); v != want {
			t.Fatalf("validation input %d = %d, want %d (consecutive disjoint windows)", i, v, want)
		}
	}
}

func TestTooSmall(t *testing.T) {
	c, err := New("tiny.txt", []byte(strings.Repeat("x", 20)))
	if err != nil {
		t.Fatal(err)
	}
	// Train has 18 bytes, validation 2.
	if _, _, err := c.Batch(0, 0, 0, 1, 17); err != nil {
		t.Fatalf("seq 17 fits 18 bytes: %v", err)
	}
	_, _, err = c.Batch(0, 0, 0, 1, 18)
	if err == nil || !strings.Contains(err.Error(), "tiny.txt") || !strings.Contains(err.Error(), "training split has 18 bytes") {
		t.Fatalf("want a clear too-small error naming the corpus, got %v", err)
	}
	if _, _, err := c.ValBatch(0, 1, 2); err == nil || !strings.Contains(err.Error(), "validation split has 2 bytes") {
		t.Fatalf("want a clear validation too-small error, got %v", err)
	}
	for _, bad := range [][4]int{{-1, 0, 1, 4}, {0, -1, 1, 4}, {0, 0, 0, 4}, {0, 0, 1, 0}} {
		if _, _, err := c.Batch(0, bad[0], bad[1], bad[2], bad[3]); err == nil {
			t.Errorf("Batch(step=%d micro=%d batch=%d seq=%d) accepted", bad[0], bad[1], bad[2], bad[3])
		}
	}
	if _, err := New("empty", nil); err == nil {
		t.Error("empty corpus accepted")
	}
}

func TestLoadDirectory(t *testing.T) {
	dir := t.TempDir()
	write := func(rel, s string) {
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("b.txt", "BBBB")
	write("a/z.txt", "ZZZZ")
	write("a/b/c.txt", "CCCC")
	write(".git/objects/x", "hidden")
	write(".hidden.txt", "hidden")
	write("c.txt", "0123456789")
	if err := os.Symlink(filepath.Join(dir, "b.txt"), filepath.Join(dir, "d-link.txt")); err != nil {
		t.Fatal(err)
	}
	c, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	// Lexical path order: a/b/c.txt, a/z.txt, b.txt, c.txt, d-link.txt (-> b.txt).
	want := "CCCCZZZZBBBB0123456789BBBB"
	got := string(c.train.b) + string(c.val.b)
	if got != want {
		t.Fatalf("directory corpus = %q, want %q", got, want)
	}
	if c.Name() != dir {
		t.Fatalf("name %q", c.Name())
	}
	f, err := Load(filepath.Join(dir, "c.txt"))
	if err != nil || string(f.train.b)+string(f.val.b) != "0123456789" {
		t.Fatalf("single file: %v", err)
	}
	if _, err := Load(filepath.Join(dir, "missing")); err == nil || !strings.Contains(err.Error(), "missing") {
		t.Fatalf("missing path: %v", err)
	}
	empty := t.TempDir()
	if _, err := Load(empty); err == nil || !strings.Contains(err.Error(), "no regular files") {
		t.Fatalf("empty directory: %v", err)
	}
	d, err := Load("")
	if err != nil || d.Name() != DefaultName {
		t.Fatalf("empty path should be the default corpus: %v", err)
	}
}
