package checkpoint

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestCheckWritable: a root that can be created and written passes; one
// under a regular file, or in a read-only directory (not as root, which
// writes anyway), is refused before any save.
func TestCheckWritable(t *testing.T) {
	dir := t.TempDir()
	if err := CheckWritable(filepath.Join(dir, "a", "b")); err != nil {
		t.Errorf("new root: %v", err)
	}
	if entries, _ := os.ReadDir(filepath.Join(dir, "a", "b")); len(entries) != 0 {
		t.Errorf("the check left %v behind", entries)
	}
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := CheckWritable(filepath.Join(file, "ckpt")); err == nil || !strings.Contains(err.Error(), "not a directory") {
		t.Errorf("root under a file: %v, want 'not a directory'", err)
	}
	if os.Geteuid() == 0 {
		t.Log("running as root, which may write a read-only directory: that case is skipped")
		return
	}
	ro := filepath.Join(dir, "ro")
	if err := os.Mkdir(ro, 0o555); err != nil {
		t.Fatal(err)
	}
	if err := CheckWritable(ro); err == nil || !errors.Is(err, os.ErrPermission) {
		t.Errorf("read-only root: %v, want permission denied", err)
	}
}

// TestClearAndCleanTemps: Clear removes every step directory (complete or
// not) and nothing else; CleanTemps removes temporary files of killed saves
// except in the directory being written, and what a crashed Clear left.
func TestClearAndCleanTemps(t *testing.T) {
	root := t.TempDir()
	shards := split(params(), 2, 3)
	for _, s := range []int{2, 4} {
		if err := Save(StepDir(root, s), manifest(s), shards); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := WriteShard(StepDir(root, 6), 0, 2, shards[0]); err != nil { // a save cut short
		t.Fatal(err)
	}
	temps := []string{filepath.Join(StepDir(root, 4), ".stage-001-of-002.safetensors.tmp-1"), filepath.Join(StepDir(root, 6), ".manifest.json.tmp-2")}
	for _, p := range temps {
		if err := os.WriteFile(p, []byte("torn"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	keep := filepath.Join(root, "notes.txt")
	if err := os.WriteFile(keep, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if got, err := Complete(root); err != nil || !slices.Equal(got, []int{2, 4}) {
		t.Errorf("Complete = %v, %v; want [2 4]", got, err)
	}
	removed, err := CleanTemps(root, StepDir(root, 6))
	if err != nil || !slices.Equal(removed, temps[:1]) {
		t.Errorf("CleanTemps skipping step 6 removed %v, %v; want %v", removed, err, temps[:1])
	}
	if _, err := os.Stat(temps[1]); err != nil {
		t.Errorf("the skipped directory's temporary file: %v", err)
	}
	if _, _, err := Load(StepDir(root, 4), Expect{}); err != nil {
		t.Errorf("step 4 after CleanTemps: %v", err)
	}
	// A Clear that crashed after moving step 2 aside.
	trash := filepath.Join(root, trashPrefix+"x")
	if err := os.Mkdir(trash, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(StepDir(root, 2), filepath.Join(trash, "step-000002")); err != nil {
		t.Fatal(err)
	}
	if got, _ := Complete(root); !slices.Equal(got, []int{4}) {
		t.Errorf("after a crashed Clear: %v, want only the old run's newest [4]", got)
	}
	if err := Clear(root); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(root)
	if err != nil || len(entries) != 1 || entries[0].Name() != "notes.txt" {
		t.Errorf("after Clear: %v, %v; want only notes.txt", entries, err)
	}
	if err := Clear(filepath.Join(root, "missing")); err != nil {
		t.Errorf("Clear of a missing root: %v", err)
	}
}
