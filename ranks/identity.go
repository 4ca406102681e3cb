package ranks

import (
	"context"
	"fmt"
	"net"
	"os"
	"strconv"
	"time"

	"github.com/pplaunch/pplaunch/ranks/stageloop"

	"github.com/pplaunch/pplaunch/contract"
	"github.com/pplaunch/pplaunch/store"
)

// Identity is a rank's place in its job, read from the environment the agent
// (or `pplaunch --direct` under srun or mpirun) gives it. The variable names
// are the constants in package store (contract.EnvRank, ...).
type Identity struct {
	Rank           int    // RANK
	LocalRank      int    // LOCAL_RANK
	WorldSize      int    // WORLD_SIZE
	LocalWorldSize int    // LOCAL_WORLD_SIZE
	NodeRank       int    // NODE_RANK (= GROUP_RANK)
	NumNodes       int    // GROUP_WORLD_SIZE
	MasterAddr     string // MASTER_ADDR: node 0's host
	MasterPort     int    // MASTER_PORT: a port left free on node 0 for the ranks
	StoreAddr      string // PPLAUNCH_STORE_ADDR: the job's store, host:port
	RunID          string // PPLAUNCH_RUN_ID
	Token          string // PPLAUNCH_TOKEN: presented on every store connection
	RestartCount   int    // PPLAUNCH_RESTART_COUNT: 0 on the first attempt
	MaxRestarts    int    // PPLAUNCH_MAX_RESTARTS
	HostsStore     bool   // PPLAUNCH_HOST_STORE=1: this rank serves the store (rank 0 under --direct)
}

// String is "rank 5 of 8 (local rank 1 of 4 on node 1)".
func (id Identity) String() string {
	return fmt.Sprintf("rank %d of %d (local rank %d of %d on node %d)", id.Rank, id.WorldSize, id.LocalRank, id.LocalWorldSize, id.NodeRank)
}

// IdentityFromEnv reads the rank contract through getenv (os.Getenv).
func IdentityFromEnv(getenv func(string) string) (Identity, error) {
	var id Identity
	var err error
	num := func(dst *int, name string, required bool, def int) {
		if err != nil {
			return
		}
		v := getenv(name)
		if v == "" {
			if required {
				err = fmt.Errorf("rank identity: %s is not set (not started by pplaunch, or srun/mpirun without --direct?)", name)
			}
			*dst = def
			return
		}
		n, perr := strconv.Atoi(v)
		if perr != nil || n < 0 {
			err = fmt.Errorf("rank identity: %s=%q is not a non-negative integer", name, v)
			return
		}
		*dst = n
	}
	num(&id.Rank, contract.EnvRank, true, 0)
	num(&id.WorldSize, contract.EnvWorldSize, true, 0)
	num(&id.LocalRank, contract.EnvLocalRank, true, 0)
	num(&id.LocalWorldSize, contract.EnvLocalWorldSize, true, 0)
	num(&id.NodeRank, contract.EnvNodeRank, false, 0)
	num(&id.NumNodes, contract.EnvNumNodes, false, 1)
	num(&id.MasterPort, contract.EnvMasterPort, false, 0)
	num(&id.RestartCount, contract.EnvRestartCount, false, 0)
	num(&id.MaxRestarts, contract.EnvMaxRestarts, false, 0)
	if err != nil {
		return id, err
	}
	switch {
	case id.WorldSize < 1 || id.Rank >= id.WorldSize:
		return id, fmt.Errorf("rank identity: RANK=%d is outside WORLD_SIZE=%d", id.Rank, id.WorldSize)
	case id.LocalWorldSize < 1 || id.LocalRank >= id.LocalWorldSize || id.LocalWorldSize > id.WorldSize:
		return id, fmt.Errorf("rank identity: LOCAL_RANK=%d, LOCAL_WORLD_SIZE=%d do not fit WORLD_SIZE=%d", id.LocalRank, id.LocalWorldSize, id.WorldSize)
	}
	id.MasterAddr = getenv(contract.EnvMasterAddr)
	id.StoreAddr = getenv(contract.EnvStoreAddr)
	if id.StoreAddr == "" && id.MasterAddr != "" && id.MasterPort > 0 {
		id.StoreAddr = net.JoinHostPort(id.MasterAddr, strconv.Itoa(id.MasterPort))
	}
	id.RunID = getenv(contract.EnvRunID)
	id.Token = getenv(contract.EnvToken)
	id.HostsStore = getenv(contract.EnvHostStore) == "1"
	return id, nil
}

// Rank is a running rank: its identity and its connection to the job's store.
// Store's keys live in a namespace of this attempt (restart), so a restarted
// group never reads the keys of the one before.
type Rank struct {
	Identity
	Store  *store.Client
	server *store.Server // when HostsStore
}

// storeBindHost is the address the store listens on: only loopback when the
// ranks reach it there (a job on one node, whose token may derive from its run
// id under --direct: no other machine can then reach the store at all), else
// every interface, since ranks on other nodes dial MASTER_ADDR.
func storeBindHost(host string) string {
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() || host == "localhost" {
		return host
	}
	return ""
}

// listen serves the job's store on host:port.
func (r *Rank) listen(host, port string) (err error) {
	r.server, err = store.Listen(net.JoinHostPort(host, port), r.Token, nil)
	return err
}

// Connect joins the job's store: it serves it first when the identity says
// so, then dials it, retrying until timeout while the store is not up yet.
func Connect(ctx context.Context, id Identity, timeout time.Duration) (*Rank, error) {
	if id.StoreAddr == "" {
		return nil, fmt.Errorf("%v: no store address (%s, or %s and %s)", id, contract.EnvStoreAddr, contract.EnvMasterAddr, contract.EnvMasterPort)
	}
	if id.Token == "" {
		return nil, fmt.Errorf("%v: %s is not set; the store refuses connections without the job's token", id, contract.EnvToken)
	}
	r := &Rank{Identity: id}
	if id.HostsStore {
		host, port, err := net.SplitHostPort(id.StoreAddr)
		if err != nil {
			return nil, fmt.Errorf("%v: store address %q: %w", id, id.StoreAddr, err)
		}
		if err := r.listen(storeBindHost(host), port); err != nil {
			return nil, fmt.Errorf("%v hosts the store: %w", id, err)
		}
	}
	dctx, cancel := stageloop.WaitContext(ctx, timeout)
	defer cancel()
	c, err := store.Dial(dctx, id.StoreAddr, id.Token, fmt.Sprintf("ranks/%d/", id.RestartCount))
	if err != nil {
		if r.server != nil {
			r.server.Close()
		}
		return nil, fmt.Errorf("%v: %w", id, err)
	}
	r.Store = c
	stopAtJoin(os.Getenv(StopEnv), id.Rank, id.RestartCount)
	return r, nil
}

// failedKey holds the first failure a rank reported with Fail.
const failedKey = "pplaunch/failed"

// Fail tells the other ranks that this one gives up with err, so their Close
// returns at once instead of waiting at the last barrier for a rank that will
// never come (under --direct no agent stops them).
func (r *Rank) Fail(ctx context.Context, err error) {
	r.Store.CompareAndSet(ctx, failedKey, nil, []byte(fmt.Sprintf("rank %d: %v", r.Rank, err)))
}

// Close leaves the job: every rank meets at a last barrier (so no rank tears
// down what another still needs), then drops its connection; the rank that
// serves the store waits for every other to go before closing it. When a rank
// reported a failure (Fail), Close returns that failure instead of waiting.
func (r *Rank) Close(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	failed := make(chan string, 1)
	go func() {
		if v, err := r.Store.Get(ctx, failedKey); err == nil {
			failed <- string(v)
		}
	}()
	barrier := make(chan error, 1)
	go func() { barrier <- store.Barrier(ctx, r.Store, "pplaunch/close", r.WorldSize) }()
	var err error
	select {
	case err = <-barrier:
		if err != nil {
			err = fmt.Errorf("%v: closing: %w", r.Identity, err)
		}
	case why := <-failed:
		err = fmt.Errorf("%v: closing: %s", r.Identity, why)
	}
	cancel()
	r.Store.Close()
	if r.server != nil {
		ictx, icancel := context.WithTimeout(context.Background(), 10*time.Second)
		if ierr := r.server.WaitIdle(ictx); ierr != nil && err == nil {
			err = fmt.Errorf("%v: closing: %w", r.Identity, ierr)
		}
		icancel()
		r.server.Close()
	}
	return err
}
