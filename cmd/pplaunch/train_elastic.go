package main

import (
	"os"

	"github.com/pplaunch/pplaunch/contract"
	"github.com/pplaunch/pplaunch/ranks"
)

// relayout is, on rank 0 of a world an elastic job re-formed with other
// nodes, the re-layout's record; nil elsewhere. rankConfig has resolved the
// batch for the first world.
func (c *trainCmd) relayout(r *ranks.Rank) (*ranks.RelayoutRecord, error) {
	if r.Rank != 0 {
		return nil, nil
	}
	e, err := contract.ReadElastic(os.Getenv)
	if err != nil || e.PrevSize == 0 {
		return nil, err
	}
	cfg, err := c.config()
	if err != nil {
		return nil, err
	}
	return cfg.Relayout(e, r.NumNodes, r.WorldSize)
}
