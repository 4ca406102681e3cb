package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/pplaunch/pplaunch/contract"
	"github.com/pplaunch/pplaunch/ranks"
)

// elasticEnv is what the agent of an elastic job (--nnodes MIN:MAX) tells
// its ranks: the first world's size, which the batch flags were given for
// (0: the job is not elastic), and in a world that re-formed with other
// nodes, the last world's nodes and ranks and why it changed.
type elasticEnv struct {
	base                int
	prevNodes, prevSize int
	reason              string
}

// readElastic reads the agent's elastic variables.
func readElastic(getenv func(string) string) (elasticEnv, error) {
	var e elasticEnv
	if v := getenv(contract.EnvElasticBase); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return e, fmt.Errorf("%s=%q: want the first world's size", contract.EnvElasticBase, v)
		}
		e.base = n
	}
	if v := getenv(contract.EnvElasticPrev); v != "" && e.base > 0 {
		nodes, size, ok := strings.Cut(v, ":")
		var err1, err2 error
		e.prevNodes, err1 = strconv.Atoi(nodes)
		e.prevSize, err2 = strconv.Atoi(size)
		if !ok || err1 != nil || err2 != nil || e.prevNodes < 1 || e.prevSize < 1 {
			return e, fmt.Errorf("%s=%q: want NODES:SIZE", contract.EnvElasticPrev, v)
		}
		e.reason = getenv(contract.EnvElasticReason)
	}
	return e, nil
}

// elasticConfig is cfg (the flags' configuration) for a world of size
// ranks: an elastic job's keeps the global batch of its first world.
func elasticConfig(cfg ranks.TrainConfig, e elasticEnv, size int) (ranks.TrainConfig, error) {
	if e.base == 0 {
		return cfg, nil
	}
	n, _, err := cfg.ElasticLayout(e.base, size)
	if err != nil {
		return cfg, fmt.Errorf("the world re-formed with %d ranks: %w", size, err)
	}
	return n, nil
}

// relayoutRecord is the record of the re-layout that made this world (nodes
// nodes, size ranks) from the last, or nil when this world is not a
// re-layout's; its step is filled in once training resumes.
func relayoutRecord(cfg ranks.TrainConfig, e elasticEnv, nodes, size int) (*ranks.RelayoutRecord, error) {
	if e.base == 0 || e.prevSize == 0 {
		return nil, nil
	}
	_, from, err := cfg.ElasticLayout(e.base, e.prevSize)
	if err != nil {
		return nil, fmt.Errorf("the last world's layout: %w", err)
	}
	_, to, err := cfg.ElasticLayout(e.base, size)
	if err != nil {
		return nil, err
	}
	return &ranks.RelayoutRecord{Record: ranks.RecordRelayout, FromNodes: e.prevNodes, ToNodes: nodes,
		FromRanks: e.prevSize, ToRanks: size, From: from, To: to, Reason: e.reason}, nil
}

// relayout is, on rank 0 of a world an elastic job re-formed with other
// nodes, the re-layout's record; nil elsewhere. rankConfig has resolved the
// batch for the first world.
func (c *trainCmd) relayout(r *ranks.Rank) (*ranks.RelayoutRecord, error) {
	if r.Rank != 0 {
		return nil, nil
	}
	e, err := readElastic(os.Getenv)
	if err != nil || e.prevSize == 0 {
		return nil, err
	}
	cfg, err := c.config()
	if err != nil {
		return nil, err
	}
	return relayoutRecord(cfg, e, r.NumNodes, r.WorldSize)
}
