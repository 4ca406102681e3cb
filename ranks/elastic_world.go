package ranks

import (
	"fmt"

	"github.com/pplaunch/pplaunch/contract"
)

// ForWorld is c (the flags' configuration) for a world of size ranks: an
// elastic job's (e.Base > 0) keeps the global batch of its first world; any
// other's is c.
func (c TrainConfig) ForWorld(e contract.Elastic, size int) (TrainConfig, error) {
	if e.Base == 0 {
		return c, nil
	}
	n, _, err := c.ElasticLayout(e.Base, size)
	if err != nil {
		return c, fmt.Errorf("the world re-formed with %d ranks: %w", size, err)
	}
	return n, nil
}

// Relayout is the record of the re-layout that made this world (nodes
// nodes, size ranks) from the last, or nil when this world is not a
// re-layout's; its step is filled in once training resumes.
func (c TrainConfig) Relayout(e contract.Elastic, nodes, size int) (*RelayoutRecord, error) {
	if e.Base == 0 || e.PrevSize == 0 {
		return nil, nil
	}
	_, from, err := c.ElasticLayout(e.Base, e.PrevSize)
	if err != nil {
		return nil, fmt.Errorf("the last world's layout: %w", err)
	}
	_, to, err := c.ElasticLayout(e.Base, size)
	if err != nil {
		return nil, err
	}
	return &RelayoutRecord{Record: RecordRelayout, FromNodes: e.PrevNodes, ToNodes: nodes,
		FromRanks: e.PrevSize, ToRanks: size, From: from, To: to, Reason: e.Reason}, nil
}
