package main

import (
	"slices"
	"testing"

	"github.com/pplaunch/pplaunch/ranks"
)

// rankLocal are the train options that need not be alike on every rank,
// each with why; every other option is tagged same:"true" or compared
// another way (comparedOtherwise).
var rankLocal = map[string]string{
	"--sample-tokens": "rank 0 prints the sample", "--temperature": "rank 0 prints the sample", "--top-k": "rank 0 prints the sample",
	"--prompt": "rank 0 prints the sample", "--sample-every": "rank 0 prints the sample",
	"--metrics-addr": "each rank serves its own", "--metrics": "rank 0 writes it", "--trace": "rank 0 writes it",
	"--trace-svg": "rank 0 writes it", "--trace-steps": "rank 0 draws them",
	"--device": "a node's devices are its own (the communicator's checks compare what crosses)",
	"--tf32":   "a node's devices are its own", "--backend": "the agent chooses it for its node's ranks",
}

// comparedOtherwise are compared by ranks.TrainConfig.Flags itself: the
// model's kind (its sizes are agreed, resolved) and the cut, not the flags
// that chose them.
var comparedOtherwise = []string{"--model", "--layers-per-stage", "--balance"}

// TestAgreedOptions: every option is agreed between the ranks, or local to
// a rank for a reason, or compared another way; and a run given an agreed
// option's value (TestOptionsRoundTrip's rows) compares a value other than
// the default's under that flag.
func TestAgreedOptions(t *testing.T) {
	def, _ := parsedEffective(t, "", 1, roundTripBase...)
	for _, o := range trainOptions(&trainCmd{}) {
		_, local := rankLocal[o.Flag]
		other := slices.Contains(comparedOtherwise, o.Flag)
		if o.Same == (local || other) || (local && other) {
			t.Errorf("%s: same:%v, rank-local %v, compared otherwise %v: want exactly one", o.Flag, o.Same, local, other)
		}
		if !o.Same {
			continue
		}
		args, world := roundTripArgs(t, o.Flag)
		cfg, _ := parsedEffective(t, "", world, args...)
		d := ranks.DiffFlags(cfg.Flags(nil), def.Flags(nil))
		if !slices.ContainsFunc(d, func(x ranks.FlagDiff) bool { return x.Flag == o.Flag }) {
			t.Errorf("%s: a run given %v compares %v against the defaults' run, not %s", o.Flag, args[len(roundTripBase):], d, o.Flag)
		}
	}
}
