package bench

import (
	"strings"
	"testing"
)

func TestScalingPlanSizes(t *testing.T) {
	type sz struct{ nodes, nproc, pp, dp, micro, batch int }
	cases := []struct {
		name string
		plan ScalingPlan
		want []sz
		err  string
	}{
		{"weak pp over nodes", ScalingPlan{Nodes: []int{4, 1, 2}, NProc: []int{1}, Mode: Weak, Grow: "pp", Micro: 8, MicroSize: 4},
			[]sz{{1, 1, 1, 1, 8, 32}, {2, 1, 2, 1, 16, 64}, {4, 1, 4, 1, 32, 128}}, ""},
		{"strong pp keeps the batch", ScalingPlan{Nodes: []int{1}, NProc: []int{1, 2, 4}, Mode: Strong, Grow: "pp", Micro: 8, MicroSize: 2},
			[]sz{{1, 1, 1, 1, 8, 16}, {1, 2, 2, 1, 8, 16}, {1, 4, 4, 1, 8, 16}}, ""},
		{"weak dp from a pipeline of the smallest world", ScalingPlan{Nodes: []int{1, 2, 4}, NProc: []int{2}, Mode: Weak, Grow: "dp", Micro: 4, MicroSize: 1},
			[]sz{{1, 2, 2, 1, 4, 4}, {2, 2, 2, 2, 4, 8}, {4, 2, 2, 4, 4, 16}}, ""},
		{"strong dp splits the batch", ScalingPlan{Nodes: []int{1, 2, 4}, NProc: []int{1}, Mode: Strong, Grow: "dp", Fixed: 1, Micro: 8, MicroSize: 1},
			[]sz{{1, 1, 1, 1, 8, 8}, {2, 1, 1, 2, 4, 8}, {4, 1, 1, 4, 2, 8}}, ""},
		{"fixed dp 2 under pp growth", ScalingPlan{Nodes: []int{1}, NProc: []int{2, 4}, Mode: Weak, Grow: "pp", Fixed: 2, Micro: 4, MicroSize: 1},
			[]sz{{1, 2, 1, 2, 4, 8}, {1, 4, 2, 2, 8, 16}}, ""},
		{"equal worlds: fewer nodes first, duplicates once", ScalingPlan{Nodes: []int{2, 1, 1}, NProc: []int{2, 1}, Mode: Weak, Grow: "pp", Micro: 2, MicroSize: 1},
			[]sz{{1, 1, 1, 1, 2, 2}, {1, 2, 2, 1, 4, 4}, {2, 1, 2, 1, 4, 4}, {2, 2, 4, 1, 8, 8}}, ""},
		{"strong dp batch does not split", ScalingPlan{Nodes: []int{1, 4}, NProc: []int{1}, Mode: Strong, Grow: "dp", Fixed: 1, Micro: 2, MicroSize: 1},
			nil, "give --microbatches a multiple of 4"},
		{"world not a multiple of the fixed pp", ScalingPlan{Nodes: []int{2, 3}, NProc: []int{1}, Mode: Weak, Grow: "dp", Micro: 2, MicroSize: 1},
			nil, "world 3 (3 nodes × 1 rank) does not split into pp 2"},
		{"weak batch grows by a fraction of a sequence", ScalingPlan{Nodes: []int{2, 3}, NProc: []int{1}, Mode: Weak, Grow: "pp", Micro: 1, MicroSize: 1},
			nil, "world 3: the smallest world's global batch of 1 sequences × 3/2 is not whole"},
		{"weak batch grows by a whole fraction", ScalingPlan{Nodes: []int{2, 3}, NProc: []int{1}, Mode: Weak, Grow: "pp", Micro: 2, MicroSize: 1},
			[]sz{{2, 1, 2, 1, 2, 2}, {3, 1, 3, 1, 3, 3}}, ""},
		{"bad mode", ScalingPlan{Nodes: []int{1}, NProc: []int{1}, Mode: "wide", Grow: "pp", Micro: 2, MicroSize: 1}, nil, `mode "wide": want weak or strong`},
		{"bad grow", ScalingPlan{Nodes: []int{1}, NProc: []int{1}, Mode: Weak, Grow: "tp", Micro: 2, MicroSize: 1}, nil, `--grow "tp"`},
		{"zero nodes", ScalingPlan{Nodes: []int{0}, NProc: []int{1}, Mode: Weak, Grow: "pp", Micro: 2, MicroSize: 1}, nil, "--nodes 0"},
		{"no sizes", ScalingPlan{Mode: Weak, Grow: "pp", Micro: 2, MicroSize: 1}, nil, "no sizes"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := c.plan.Sizes()
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("error %v, want one containing %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(c.want) {
				t.Fatalf("%d sizes %+v, want %d", len(got), got, len(c.want))
			}
			for i, w := range c.want {
				g := got[i]
				if g.Nodes != w.nodes || g.NProc != w.nproc || g.World != w.nodes*w.nproc || g.PP != w.pp || g.DP != w.dp || g.Micro != w.micro || g.GlobalBatch != w.batch {
					t.Errorf("size %d: %+v, want %+v", i, g, w)
				}
				if g.GlobalBatch != g.DP*g.Micro*g.MicroSize {
					t.Errorf("size %d: batch %d != dp %d × micro %d × size %d", i, g.GlobalBatch, g.DP, g.Micro, g.MicroSize)
				}
			}
		})
	}
}
