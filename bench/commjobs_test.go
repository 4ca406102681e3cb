package bench

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/pplaunch/pplaunch/collective"
	"github.com/pplaunch/pplaunch/ranks"
)

// The link flags map onto TCPOptions, and contradicting ones are refused
// naming both.
func TestLinkOptions(t *testing.T) {
	for _, tc := range []struct {
		flags        LinkOptions
		buffer, poll int
		err          string
	}{
		{LinkOptions{}, 0, 0, ""},
		{LinkOptions{SocketBuffer: 512 << 10}, 512 << 10, 0, ""},
		{LinkOptions{Autotune: true, NoPoll: true}, -1, -1, ""},
		{LinkOptions{Autotune: true, SocketBuffer: 1 << 20}, 0, 0, "--autotune and --socket-buffer 1MiB: choose one"},
	} {
		o, err := tc.flags.TCPOptions(time.Minute)
		if tc.err != "" {
			if err == nil || err.Error() != tc.err {
				t.Errorf("%+v: error %v, want %q", tc.flags, err, tc.err)
			}
			continue
		}
		if err != nil || o.SocketBuffer != tc.buffer || o.Poll != tc.poll || o.Timeout != time.Minute {
			t.Errorf("%+v: %+v, %v; want buffer %d, poll %d, timeout 1m", tc.flags, o, err, tc.buffer, tc.poll)
		}
	}
}

// The TCP job refuses bad flags before it opens a communicator, and opens
// it with the options the flags give.
func TestCommJobOptions(t *testing.T) {
	var opened []collective.TCPOptions
	open := func(_ context.Context, _ *ranks.Rank, o collective.TCPOptions) (collective.Comm, error) {
		opened = append(opened, o)
		return nil, errors.New("no communicator here")
	}
	for _, tc := range []struct {
		name    string
		job     RankJob
		err     string
		segment int
	}{
		{"p2p, contradicting flags", first(P2PJobs(P2POptions{}, LinkOptions{Autotune: true, SocketBuffer: 1 << 20}, time.Minute, open, nil)),
			"--autotune and --socket-buffer 1MiB: choose one", -1},
		{"p2p, no timeout", first(P2PJobs(P2POptions{}, LinkOptions{}, 0, open, nil)), "--timeout 0s: must be positive", -1},
		{"allreduce", first(AllReduceJobs(AllReduceOptions{}, LinkOptions{NoPoll: true}, 64<<10, time.Minute, open, nil)), "no communicator here", 64 << 10},
	} {
		opened = nil
		err := tc.job(context.Background(), &ranks.Rank{})
		if err == nil || err.Error() != tc.err {
			t.Errorf("%s: error %v, want %q", tc.name, err, tc.err)
		}
		if (len(opened) == 1) != (tc.segment >= 0) || len(opened) == 1 && (opened[0].SegmentBytes != tc.segment || opened[0].Poll != -1) {
			t.Errorf("%s: opened %+v", tc.name, opened)
		}
	}
}

func first(tcp, _ RankJob) RankJob { return tcp }
