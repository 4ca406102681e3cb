package ranks

import (
	"strings"
	"testing"
)

// ElasticLayout keeps the first world's global batch: the same pp with a new
// dp where the batch splits, else the same dp with a new pp, else an error
// that says why neither fits.
func TestElasticLayout(t *testing.T) {
	cases := []struct {
		name       string
		pp, dp, m  int // the flags (0: the world divided by the other)
		base, size int
		want       Shape
		err        string
	}{
		{name: "same size", pp: 2, m: 4, base: 4, size: 4, want: Shape{PP: 2, DP: 2, Micro: 4}},
		{name: "fewer replicas, more micro-batches each", pp: 2, m: 4, base: 8, size: 4, want: Shape{PP: 2, DP: 2, Micro: 8}},
		{name: "more replicas, fewer each", pp: 2, m: 4, base: 4, size: 8, want: Shape{PP: 2, DP: 4, Micro: 2}},
		{name: "pp does not divide: the pipeline changes", dp: 2, m: 2, base: 6, size: 4, want: Shape{PP: 2, DP: 2, Micro: 2}},
		{name: "the batch does not split: the pipeline changes", dp: 2, m: 2, base: 4, size: 6, want: Shape{PP: 3, DP: 2, Micro: 2}},
		{name: "pure data parallel down to one replica", pp: 1, m: 2, base: 2, size: 1, want: Shape{PP: 1, DP: 1, Micro: 4}},
		{name: "nothing fits", pp: 2, m: 1, base: 4, size: 10,
			err: "no layout of 10 ranks keeps the global batch of 2 micro-batches of pp 2 dp 2: pp 2 dp 5: the global batch of 2 micro-batches does not split over 5 replicas; pp 5 dp 2 with 1 micro-batches per replica: --schedule 1f1b on --pp 5 runs 5 stages"},
		{name: "neither width divides", pp: 2, m: 2, base: 4, size: 7,
			err: "keeping pp 2: 7 ranks are not a multiple of it; keeping dp 2: 7 ranks are not a multiple of it"},
		{name: "the first world is bad", pp: 3, m: 4, base: 4, size: 3, err: "the run's first world of 4 ranks"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := tiny(t)
			cfg.PP, cfg.DP, cfg.Micro = c.pp, c.dp, c.m
			n, sh, err := cfg.ElasticLayout(c.base, c.size)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("error %v, want %q", err, c.err)
				}
				return
			}
			if err != nil || sh != c.want {
				t.Fatalf("%+v, %v; want %+v", sh, err, c.want)
			}
			if l, err := n.Plan(c.size); err != nil || l.PP != sh.PP || l.DP != sh.DP || n.Micro != sh.Micro {
				t.Errorf("the configuration returned plans %d×%d with %d micro-batches (%v), not %+v", l.PP, l.DP, n.Micro, err, sh)
			}
		})
	}
}

func TestRelayoutLine(t *testing.T) {
	r := RelayoutRecord{Step: 12, FromNodes: 3, ToNodes: 2, From: Shape{PP: 2, DP: 3, Micro: 4}, To: Shape{PP: 2, DP: 2, Micro: 6}, Reason: "node 2 was lost"}
	want := "re-layout: 3 → 2 nodes (node 2 was lost), pp 2 dp 3 → pp 2 dp 2, 4 → 6 micro-batches per replica (global batch 12 micro-batches), from checkpoint step 12"
	if got := r.Line(); got != want {
		t.Errorf("line %q,\nwant %q", got, want)
	}
	r.Step = 0
	if got := r.Line(); !strings.HasSuffix(got, "from step 0 (no checkpoint yet)") {
		t.Errorf("without a checkpoint: %q", got)
	}
}
