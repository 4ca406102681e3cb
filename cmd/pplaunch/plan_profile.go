package main

import (
	"fmt"
	"os"

	"github.com/pplaunch/pplaunch/plan"
)

// readProfile reads a file that train --profile wrote.
func readProfile(path string) (*plan.Profile, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	p, err := plan.ReadProfile(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return p, nil
}
