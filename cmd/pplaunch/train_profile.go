package main

import (
	"bytes"
	"os"
	"path/filepath"

	"github.com/pplaunch/pplaunch/ranks"
)

// writeProfile writes p to path atomically (a temporary file in the same
// directory, then a rename), so that a reader never sees half a profile.
func writeProfile(path string, p *ranks.Profile) error {
	var b bytes.Buffer
	if err := p.Write(&b); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".profile-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(b.Bytes()); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
