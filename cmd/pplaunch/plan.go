package main

import (
	"context"
	"errors"
	"io"
)

// planCmd is `pplaunch plan`.
type planCmd struct{}

func (c *planCmd) run(ctx context.Context, stdout, stderr io.Writer) error {
	return errors.New("plan: not built yet")
}
