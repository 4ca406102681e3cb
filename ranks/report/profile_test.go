package report

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// A file written atomically has the new content and os.Create's mode; a
// failed write leaves the old file as it was and no temporary file behind.
func TestWriteFileAtomic(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "out.csv")
	write := func(s string) func(io.Writer) error {
		return func(w io.Writer) error { _, err := io.WriteString(w, s); return err }
	}
	if err := WriteFileAtomic(path, write("first\n")); err != nil {
		t.Fatal(err)
	}
	umask := syscall.Umask(0)
	syscall.Umask(umask)
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if want := os.FileMode(0o644) &^ os.FileMode(umask); st.Mode().Perm() != want {
		t.Errorf("mode %v, want %v (0644 less the umask %03o)", st.Mode().Perm(), want, umask)
	}
	failed := func(w io.Writer) error {
		io.WriteString(w, "half")
		return errors.New("disk full")
	}
	if err := WriteFileAtomic(path, failed); err == nil || err.Error() != path+": disk full" {
		t.Errorf("failed write: %v, want %q", err, path+": disk full")
	}
	if b, _ := os.ReadFile(path); string(b) != "first\n" {
		t.Errorf("after a failed write the file holds %q, want the old %q", b, "first\n")
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("the directory holds %d entries, want only the file: %v", len(ents), ents)
	}
}
