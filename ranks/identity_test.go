package ranks

import (
	"context"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pplaunch/pplaunch/store"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func agentEnv() map[string]string {
	return map[string]string{
		"RANK": "5", "LOCAL_RANK": "1", "WORLD_SIZE": "8", "LOCAL_WORLD_SIZE": "4", "NODE_RANK": "1", "GROUP_WORLD_SIZE": "2",
		"MASTER_ADDR": "n1", "MASTER_PORT": "4000", "PPLAUNCH_STORE_ADDR": "n1:29500", "PPLAUNCH_RUN_ID": "r",
		"PPLAUNCH_TOKEN": "tok", "PPLAUNCH_RESTART_COUNT": "2", "PPLAUNCH_MAX_RESTARTS": "3",
	}
}

func TestIdentityFromEnv(t *testing.T) {
	id, err := IdentityFromEnv(env(agentEnv()))
	if err != nil {
		t.Fatal(err)
	}
	want := Identity{Rank: 5, LocalRank: 1, WorldSize: 8, LocalWorldSize: 4, NodeRank: 1, NumNodes: 2, MasterAddr: "n1",
		MasterPort: 4000, StoreAddr: "n1:29500", RunID: "r", Token: "tok", RestartCount: 2, MaxRestarts: 3}
	if id != want {
		t.Fatalf("got  %+v\nwant %+v", id, want)
	}
	if s := id.String(); s != "rank 5 of 8 (local rank 1 of 4 on node 1)" {
		t.Errorf("String() = %q", s)
	}
	// Without PPLAUNCH_STORE_ADDR the store is at MASTER_ADDR:MASTER_PORT.
	e := agentEnv()
	delete(e, "PPLAUNCH_STORE_ADDR")
	if id, _ := IdentityFromEnv(env(e)); id.StoreAddr != "n1:4000" {
		t.Errorf("store address %q, want n1:4000", id.StoreAddr)
	}
}

func TestIdentityFromEnvErrors(t *testing.T) {
	cases := []struct {
		name, key, val, wantErr string
	}{
		{"no rank", "RANK", "", "RANK is not set"},
		{"bad rank", "RANK", "x", `RANK="x"`},
		{"rank beyond world", "RANK", "8", "outside WORLD_SIZE=8"},
		{"local beyond local world", "LOCAL_RANK", "4", "LOCAL_RANK=4"},
		{"negative restart", "PPLAUNCH_RESTART_COUNT", "-1", "PPLAUNCH_RESTART_COUNT"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := agentEnv()
			e[c.key] = c.val
			if _, err := IdentityFromEnv(env(e)); err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Fatalf("err = %v, want one containing %q", err, c.wantErr)
			}
		})
	}
}

// TestConnectDirect: rank 0 serves the store, as under --direct; every rank
// connects (some before the store is up), meets at a barrier and closes.
func TestConnectDirect(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	const n = 4
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for r := n - 1; r >= 0; r-- {
		id := Identity{Rank: r, LocalRank: r, WorldSize: n, LocalWorldSize: n, StoreAddr: addr, Token: "tok", HostsStore: r == 0, RestartCount: 1}
		wg.Add(1)
		go func() {
			defer wg.Done()
			rk, err := Connect(ctx, id, 20*time.Second)
			if err != nil {
				errs <- err
				return
			}
			if err := rk.Store.Set(ctx, fmt.Sprintf("hello/%d", id.Rank), []byte("hi")); err != nil {
				errs <- err
			}
			if err := store.Barrier(ctx, rk.Store, "all", n); err != nil {
				errs <- err
			}
			if c, err := rk.Store.Count(ctx); err != nil || c < n {
				errs <- fmt.Errorf("rank %d counts %d keys (%v), want at least %d", id.Rank, c, err, n)
			}
			if err := rk.Close(ctx); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestConnectErrors(t *testing.T) {
	id := Identity{Rank: 1, WorldSize: 2, LocalWorldSize: 2, StoreAddr: "127.0.0.1:1"}
	if _, err := Connect(context.Background(), id, time.Second); err == nil || !strings.Contains(err.Error(), "PPLAUNCH_TOKEN") {
		t.Errorf("no token: %v", err)
	}
	id.Token = "tok"
	_, err := Connect(context.Background(), id, 100*time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "rank 1 of 2") || !strings.Contains(err.Error(), "not reachable") {
		t.Errorf("no store: %v", err)
	}
}

// TestCloseAfterFail: a rank that fails releases the others from the last
// barrier, with its error.
func TestCloseAfterFail(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const n = 3
	rks := make([]*Rank, n)
	for r := range n {
		id := Identity{Rank: r, LocalRank: r, WorldSize: n, LocalWorldSize: n, StoreAddr: addr, Token: "tok", HostsStore: r == 0}
		if rks[r], err = Connect(ctx, id, 20*time.Second); err != nil {
			t.Fatal(err)
		}
	}
	rks[2].Fail(ctx, fmt.Errorf("out of memory"))
	rks[2].Store.Close()
	var wg sync.WaitGroup
	for r := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := rks[r].Close(ctx)
			if err == nil || !strings.Contains(err.Error(), "rank 2: out of memory") {
				t.Errorf("rank %d Close: %v, want rank 2's failure", r, err)
			}
		}()
	}
	wg.Wait()
}

// TestStoreBindHost: a store that its ranks reach on loopback (one node)
// listens only there, so no other machine can reach it; otherwise it listens
// on every interface for the ranks of other nodes.
func TestStoreBindHost(t *testing.T) {
	for _, c := range []struct{ host, want string }{
		{"127.0.0.1", "127.0.0.1"}, {"127.0.0.5", "127.0.0.5"}, {"::1", "::1"}, {"localhost", "localhost"},
		{"10.1.2.3", ""}, {"node0", ""}, {"", ""},
	} {
		if got := storeBindHost(c.host); got != c.want {
			t.Errorf("storeBindHost(%q) = %q, want %q", c.host, got, c.want)
		}
	}
}
