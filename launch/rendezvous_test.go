package launch

import (
	"strings"
	"testing"
)

// The world each node derives from node 0's record: its first rank is the sum
// of the counts before it; a record that does not fit this job is refused.
func TestWorldFromRecord(t *testing.T) {
	for _, tc := range []struct {
		name        string
		rec         worldRecord
		nnodes      int
		node        int
		first, size int
		err         string
	}{
		{"node 0", worldRecord{[]int{4, 4, 4}, 29500}, 3, 0, 0, 12, ""},
		{"last node", worldRecord{[]int{4, 2, 3}, 29500}, 3, 2, 6, 9, ""},
		{"middle", worldRecord{[]int{1, 8, 1}, 29500}, 3, 1, 1, 10, ""},
		{"fewer nodes", worldRecord{[]int{4, 4}, 29500}, 3, 1, 0, 0, "published 2 nodes' rank counts, this node expects 3"},
		{"zero ranks", worldRecord{[]int{4, 0}, 29500}, 2, 1, 0, 0, "0 ranks for node 1"},
		{"no port", worldRecord{[]int{4, 4}, 0}, 2, 1, 0, 0, "master port 0"},
	} {
		w, err := tc.rec.world(World{NNodes: tc.nnodes}, tc.node)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: err = %v, want %q", tc.name, err, tc.err)
			}
			continue
		}
		if err != nil || w.FirstRank != tc.first || w.Size != tc.size || w.MasterPort != tc.rec.MasterPort {
			t.Errorf("%s: world = %+v, %v; want first %d size %d port %d", tc.name, w, err, tc.first, tc.size, tc.rec.MasterPort)
		}
	}
}
