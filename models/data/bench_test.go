package data

import "testing"

// BenchmarkBatch draws a GPT-sized micro-batch (16 x 128 tokens) from the embedded corpus.
func BenchmarkBatch(b *testing.B) {
	c, err := Default()
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(16 * 128)
	for i := 0; b.Loop(); i++ {
		if _, _, err := c.Batch(1, i, 0, 16, 128); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDefault decompresses the embedded corpus.
func BenchmarkDefault(b *testing.B) {
	b.SetBytes(int64(len(opticksGz)))
	for b.Loop() {
		if _, err := Default(); err != nil {
			b.Fatal(err)
		}
	}
}
