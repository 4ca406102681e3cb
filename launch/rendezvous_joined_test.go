package launch

import "testing"

// TestNeverJoined: a rendezvous timeout names the nodes that never came, in
// the user's words, not the store's keys.
func TestNeverJoined(t *testing.T) {
	for _, tc := range []struct {
		absent []string
		want   string
	}{
		{[]string{"rdzv/0/node/1"}, "node 1 never joined (not started, or started with a different PPLAUNCH_TOKEN, --nnodes, --rdzv-id or --rdzv-endpoint?)"},
		{[]string{"rdzv/2/node/1", "rdzv/2/node/3"}, "nodes 1, 3 never joined (not started, or started with a different PPLAUNCH_TOKEN, --nnodes, --rdzv-id or --rdzv-endpoint?)"},
		{nil, "every node joined, but node 0 did not publish the world (did its agent stop?)"},
	} {
		if got := neverJoined(tc.absent); got != tc.want {
			t.Errorf("neverJoined(%q) = %q, want %q", tc.absent, got, tc.want)
		}
	}
}
