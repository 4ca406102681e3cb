package launch

import (
	"net"
	"strconv"
	"strings"

	"github.com/pplaunch/pplaunch/store"
)

// World is this node's place in the job, as formed by the rendezvous.
type World struct {
	Size       int    // ranks in the job
	FirstRank  int    // global rank of this node's local rank 0
	NNodes     int    // nodes in the job
	MasterAddr string // node 0's host
	MasterPort int    // a port left free on node 0 for the ranks (torch binds it)
	StoreAddr  string // host:port of the pplaunch store
}

// rankEnv is the environment of local rank local in attempt restart: base (the
// agent's own environment) with the rank contract laid over it.
func rankEnv(base []string, c Config, w World, local, restart int) []string {
	set := map[string]string{
		store.EnvRole:           store.RoleRank,
		store.EnvRank:           strconv.Itoa(w.FirstRank + local),
		store.EnvLocalRank:      strconv.Itoa(local),
		store.EnvWorldSize:      strconv.Itoa(w.Size),
		store.EnvLocalWorldSize: strconv.Itoa(c.NProc),
		store.EnvGroupRank:      strconv.Itoa(c.NodeRank),
		store.EnvNodeRank:       strconv.Itoa(c.NodeRank),
		store.EnvNumNodes:       strconv.Itoa(w.NNodes),
		store.EnvMasterAddr:     w.MasterAddr,
		store.EnvMasterPort:     strconv.Itoa(w.MasterPort),
		store.EnvStoreAddr:      w.StoreAddr,
		store.EnvRunID:          c.RunID,
		store.EnvToken:          c.Token,
		store.EnvRestartCount:   strconv.Itoa(restart),
		store.EnvMaxRestarts:    strconv.Itoa(c.MaxRestarts),
		store.EnvTERestartCount: strconv.Itoa(restart),
		store.EnvTEMaxRestarts:  strconv.Itoa(c.MaxRestarts),
		store.EnvTERunID:        c.RunID,
		// The store at MASTER_PORT is the ranks' own (torch's rank 0 makes it).
		store.EnvTEUseAgent: "False",
	}
	env := make([]string, 0, len(base)+len(set)+2)
	has := map[string]bool{}
	for _, kv := range base {
		k, _, _ := strings.Cut(kv, "=")
		has[k] = true
		if _, over := set[k]; over || k == store.EnvHostStore {
			continue
		}
		env = append(env, kv)
	}
	// Ranks sharing a node would each start a thread per core and fight over
	// them; split the cores unless the user chose.
	if c.NProc > 1 {
		if !has["GOMAXPROCS"] {
			set["GOMAXPROCS"] = strconv.Itoa(max(1, c.Cores/c.NProc))
		}
		if !has["OMP_NUM_THREADS"] {
			set["OMP_NUM_THREADS"] = "1"
		}
	}
	for k, v := range set {
		env = append(env, k+"="+v)
	}
	return env
}

func joinHostPort(host string, port int) string {
	return net.JoinHostPort(host, strconv.Itoa(port))
}
