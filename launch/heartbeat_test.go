package launch

import "testing"

// The heartbeat's judgement of one node, read after read: a counter that
// does not move for heartbeatMisses reads is a lost node, once; a node whose
// suspension counter is odd is suspended, not silent, however long its
// counter stands still, and resumes with a fresh count of misses.
func TestHeartbeatJudge(t *testing.T) {
	type read struct {
		hb, susp int64
		want     beatNews
	}
	var reads []read
	reads = append(reads, read{1, 0, newsNone}, read{2, 0, newsNone})
	reads = append(reads, read{3, 1, newsSuspended})
	for range 3 * heartbeatMisses { // stopped: its counter stands still
		reads = append(reads, read{3, 1, newsNone})
	}
	reads = append(reads, read{3, 2, newsResumed}, read{4, 2, newsNone})
	for range heartbeatMisses - 1 {
		reads = append(reads, read{4, 2, newsNone})
	}
	reads = append(reads, read{4, 2, newsLost}, read{4, 2, newsNone}, read{4, 3, newsNone})
	var w nodeWatch
	for i, r := range reads {
		if got := w.judge(r.hb, r.susp); got != r.want {
			t.Fatalf("read %d (hb %d, susp %d): news %d, want %d", i, r.hb, r.susp, got, r.want)
		}
	}
}

// A lost node's reason says what was seen: the heartbeat standing still, or
// the etcd member lease lapsing, with the deadline either way.
func TestLostHow(t *testing.T) {
	for _, tc := range []struct {
		etcd bool
		want string
	}{
		{false, "node 2 was lost: its agent sent no heartbeat for 3s"},
		{true, "node 2 was lost: its etcd member lease lapsed (its agent kept it alive for no 3s)"},
	} {
		if got := lostHow(2, tc.etcd); got != tc.want {
			t.Errorf("lostHow(2, etcd %v) = %q, want %q", tc.etcd, got, tc.want)
		}
	}
}
