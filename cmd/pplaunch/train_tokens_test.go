package main

import (
	bin "encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestTrainLearnsTokenFile trains a two-stage pipeline for 30 steps on a
// nanoGPT token directory over a vocabulary of 300 (padded to 320) whose
// next token is the current one plus 7 (mod 300): a bigram a model learns
// quickly. The loss starts near ln 300 ≈ 5.7 (uniform over the vocabulary:
// the padding takes no probability, else it would start near ln 320) and
// must fall by more than a nat; one that does not learn stays near 5.7.
func TestTrainLearnsTokenFile(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, n, first int) {
		b := make([]byte, 2*n)
		for i := range n {
			bin.LittleEndian.PutUint16(b[2*i:], uint16((first+7*i)%300))
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("train.bin", 20000, 0)
	write("val.bin", 2000, 11)
	r := runJob(t, 2, 0, nil, "--data", dir, "--vocab", "300", "--gelu", "exact",
		"--layers", "2", "--width", "32", "--heads", "2", "--seq", "16", "--microbatches", "2", "--microbatch-size", "4",
		"--steps", "30", "--warmup", "2", "--lr", "0.01", "--min-lr", "0.001", "--eval-every", "0", "--eval-batches", "2", "--timeout", "60s")
	mustSucceed(t, r, "train on a token directory")
	for _, want := range []string{"vocab 300 padded to 320", "gelu=exact"} {
		if !strings.Contains(r.out, want) {
			t.Errorf("start line lacks %q:\n%s", want, r.out)
		}
	}
	l := losses(r)
	if len(l) != 30 {
		t.Fatalf("%d steps recorded, want 30\n%s", len(l), r.out)
	}
	if l[0] < 5.3 || l[0] > 6.1 {
		t.Errorf("first loss %.3f, want about ln 300 = 5.70", l[0])
	}
	if l[29] > l[0]-1 {
		t.Errorf("loss %.3f -> %.3f over 30 steps: did not learn", l[0], l[29])
	}
	last := r.metrics[29]
	if last.ValLoss == nil || *last.ValLoss > l[0]-1 {
		t.Errorf("validation loss at the end %v, want below %.3f", last.ValLoss, l[0]-1)
	}
	t.Logf("loss %.3f -> %.3f", l[0], l[29])

	bad := t.TempDir()
	os.WriteFile(filepath.Join(bad, "train.bin"), []byte{0x2c, 0x01, 1, 0}, 0o644) // token 300
	os.WriteFile(filepath.Join(bad, "val.bin"), []byte{1, 0}, 0o644)
	r = runJob(t, 1, 0, nil, "--data", bad, "--steps", "1")
	if r.code != 2 || !strings.Contains(r.out, filepath.Join(bad, "train.bin")+": token 300 at byte offset 0") {
		t.Errorf("token outside the default vocabulary: exit %d\n%s", r.code, r.out)
	}
}
