package main

import (
	"context"
	"errors"
	"io"
)

// benchStepCmd is `pplaunch bench step`.
type benchStepCmd struct{}

func (c *benchStepCmd) run(ctx context.Context, stdout, stderr io.Writer) error {
	return errors.New("bench step: not built yet")
}
