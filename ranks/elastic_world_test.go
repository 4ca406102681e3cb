package ranks

import (
	"strings"
	"testing"

	"github.com/pplaunch/pplaunch/contract"
)

// ForWorld keeps a fixed job's configuration and an elastic job's first
// global batch; Relayout records a world that re-formed, and only such a one.
func TestElasticWorld(t *testing.T) {
	cases := []struct {
		name        string
		e           contract.Elastic
		nodes, size int
		want        Shape // the configuration for the world
		relayout    *RelayoutRecord
		err         string
	}{
		{name: "not elastic", e: contract.Elastic{}, nodes: 2, size: 8, want: Shape{PP: 2, Micro: 4}},
		{name: "the first world", e: contract.Elastic{Base: 4}, nodes: 2, size: 4, want: Shape{PP: 2, Micro: 4}}, // the flags as given
		{name: "a node lost", e: contract.Elastic{Base: 4, PrevNodes: 2, PrevSize: 4, Reason: "node 1 was lost"}, nodes: 1, size: 2,
			want: Shape{PP: 2, DP: 1, Micro: 8},
			relayout: &RelayoutRecord{Record: RecordRelayout, FromNodes: 2, ToNodes: 1, FromRanks: 4, ToRanks: 2,
				From: Shape{PP: 2, DP: 2, Micro: 4}, To: Shape{PP: 2, DP: 1, Micro: 8}, Reason: "node 1 was lost"}},
		{name: "no layout", e: contract.Elastic{Base: 4}, nodes: 7, size: 7, err: "the world re-formed with 7 ranks: "},
		{name: "no last layout", e: contract.Elastic{Base: 4, PrevNodes: 7, PrevSize: 7}, nodes: 2, size: 4, err: "the last world's layout: "},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := tiny(t)
			cfg.PP, cfg.DP, cfg.Micro = 2, 0, 4 // dp: the world divided by pp
			n, err := cfg.ForWorld(c.e, c.size)
			if err == nil {
				var r *RelayoutRecord
				r, err = cfg.Relayout(c.e, c.nodes, c.size)
				if err == nil && (r == nil) != (c.relayout == nil) || r != nil && *r != *c.relayout {
					t.Errorf("relayout %+v, want %+v", r, c.relayout)
				}
			}
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("error %v, want %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := (Shape{PP: n.PP, DP: n.DP, Micro: n.Micro}); got != c.want {
				t.Errorf("configuration %+v, want %+v", got, c.want)
			}
		})
	}
}
