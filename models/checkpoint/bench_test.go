package checkpoint

import (
	"fmt"
	"path/filepath"
	"testing"
)

// BenchmarkSave and BenchmarkLoad time a 4-stage checkpoint of 4M float32 parameters
// with two Adam slots (48 MiB of tensors), including fsync and checksums.
func benchShards() []Shard {
	const perStage = 1 << 20
	var shards []Shard
	for s := 0; s < 4; s++ {
		p := Tensor{Name: fmt.Sprintf("h.%d.w", s), Shape: []int{1024, perStage / 1024}, Data: make([]float32, perStage)}
		for i := range p.Data {
			p.Data[i] = float32(i%977) * 1e-3
		}
		shards = append(shards, Shard{Params: []Tensor{p}, State: map[string][]Tensor{"adam_m": {p}, "adam_v": {p}}})
	}
	return shards
}

const benchBytes = 4 * 3 * (1 << 20) * 4

func BenchmarkSave(b *testing.B) {
	shards := benchShards()
	root := b.TempDir()
	b.SetBytes(benchBytes)
	for i := 0; b.Loop(); i++ {
		if err := Save(StepDir(root, i), Manifest{Step: i}, shards); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkLoad(b *testing.B) {
	dir := filepath.Join(b.TempDir(), "c")
	if err := Save(dir, Manifest{}, benchShards()); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(benchBytes)
	for b.Loop() {
		if _, _, err := Load(dir, Expect{}); err != nil {
			b.Fatal(err)
		}
	}
}
