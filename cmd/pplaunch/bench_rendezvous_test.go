package main

import (
	"context"
	"testing"
	"time"

	"github.com/pplaunch/pplaunch/bench"
	"github.com/pplaunch/pplaunch/launch"
	"github.com/pplaunch/pplaunch/store/etcdstore/etcdtest"
)

// 64 agents join one store at once through the agents' own rendezvous
// (launch.SimulatedJoin); the driver checks every rank is numbered exactly
// once (bench.CheckNumbering) and fails the run otherwise. No time is
// asserted.
func TestBenchRendezvousFormsWorld(t *testing.T) {
	rows, err := bench.Rendezvous(context.Background(), bench.RendezvousOptions{
		Agents: []int{64}, RanksPerAgent: 4, Rounds: 1, Timeout: 2 * time.Minute, Join: launch.SimulatedJoin(2*time.Minute, "")})
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
		Agents: []int{64}, RanksPerAgent: 4, Rounds: 2, Timeout: 2 * time.Minute, Join: launch.SimulatedJoin(2*time.Minute, srv.Endpoint)})
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1 || rows[0].Agents != 64 || rows[0].Ranks != 256 {
		t.Fatalf("rows = %+v, want one row of 64 agents and 256 ranks", rows)
	}
}
