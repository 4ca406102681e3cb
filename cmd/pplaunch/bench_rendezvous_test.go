package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/pplaunch/pplaunch/bench"
	"github.com/pplaunch/pplaunch/store/etcdstore/etcdtest"
)

// 64 agents join one store at once through the agents' own rendezvous; the
// driver checks every rank is numbered exactly once (bench.CheckNumbering)
// and fails the run otherwise. No time is asserted.
func TestBenchRendezvousFormsWorld(t *testing.T) {
	rows, err := bench.Rendezvous(context.Background(), bench.RendezvousOptions{
		Agents: []int{64}, RanksPerAgent: 4, Rounds: 1, Timeout: 2 * time.Minute, Join: joinWithin(2*time.Minute, "")})
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1 || rows[0].Agents != 64 || rows[0].Ranks != 256 {
		t.Fatalf("rows = %+v, want one row of 64 agents and 256 ranks", rows)
	}
	if rows[0].FDsPerConn < 1 {
		t.Errorf("fds per connection = %v: the agents' connections were not counted", rows[0].FDsPerConn)
	}
}

// The same through a real etcd: 64 agents with a client each.
func TestBenchRendezvousEtcdFormsWorld(t *testing.T) {
	srv := etcdtest.Start(t, etcdtest.Options{})
	rows, err := bench.Rendezvous(context.Background(), bench.RendezvousOptions{
		Agents: []int{64}, RanksPerAgent: 4, Rounds: 2, Timeout: 2 * time.Minute, Join: joinWithin(2*time.Minute, srv.Endpoint)})
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1 || rows[0].Agents != 64 || rows[0].Ranks != 256 {
		t.Fatalf("rows = %+v, want one row of 64 agents and 256 ranks", rows)
	}
}

func TestCheckNumbering(t *testing.T) {
	for _, tc := range []struct {
		name          string
		firsts, sizes []int
		want          string
	}{
		{"ok", []int{0, 2, 4}, []int{6, 6, 6}, ""},
		{"ok out of order", []int{4, 0, 2}, []int{6, 6, 6}, ""},
		{"twice", []int{0, 0, 4}, []int{6, 6, 6}, "rank 0 was given twice"},
		{"outside", []int{0, 2, 5}, []int{6, 6, 6}, "outside 0..5"},
		{"size", []int{0, 2, 4}, []int{6, 4, 6}, "agent 1 saw a world of 4"},
	} {
		err := bench.CheckNumbering(tc.firsts, tc.sizes, 2)
		if (err == nil) != (tc.want == "") || err != nil && !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want %q", tc.name, err, tc.want)
		}
	}
}

func TestIntList(t *testing.T) {
	if got, err := intList("--nproc", "1, 2,4"); err != nil || len(got) != 3 || got[2] != 4 {
		t.Errorf("intList(1, 2,4) = %v, %v", got, err)
	}
	for _, bad := range []string{"", "1,,2", "0", "-1", "x"} {
		if _, err := intList("--nproc", bad); err == nil || !strings.Contains(err.Error(), "--nproc") {
			t.Errorf("intList(%q) err = %v, want one naming --nproc", bad, err)
		}
	}
}
