package launch

import (
	"net"
	"strconv"
	"strings"

	"github.com/pplaunch/pplaunch/contract"
)

// World is this node's place in the job, as formed by the rendezvous.
type World struct {
	Size       int    // ranks in the job
	FirstRank  int    // global rank of this node's local rank 0
	NNodes     int    // nodes in the job
	MasterAddr string // node 0's host
	MasterPort int    // a port left free on node 0 for the ranks (torch binds it)
	StoreAddr  string // host:port of the pplaunch store

	// An elastic job's world (--nnodes MIN:MAX): this node's place among the
	// members (node names, in rank order), the first round's size, and what
	// changed since the last round (PrevSize 0: nothing).
	GroupRank           int
	Members             []int
	Base                int
	PrevNodes, PrevSize int
	Reason              string
}

// elasticEnv are the variables of an elastic job's ranks: the agent sets
// them or, for a fixed job, none (never its own environment's).
var elasticEnv = map[string]bool{contract.EnvElasticBase: true, contract.EnvElasticPrev: true, contract.EnvElasticReason: true}

// rankEnv is the environment of local rank local in attempt restart: base (the
// agent's own environment) with the rank contract laid over it.
func rankEnv(base []string, c Config, w World, local, restart int) []string {
	group := c.NodeRank
	if c.Elastic() {
		group = w.GroupRank
	}
	set := map[string]string{
		contract.EnvRole:           contract.RoleRank,
		contract.EnvRank:           strconv.Itoa(w.FirstRank + local),
		contract.EnvLocalRank:      strconv.Itoa(local),
		contract.EnvWorldSize:      strconv.Itoa(w.Size),
		contract.EnvLocalWorldSize: strconv.Itoa(c.NProc),
		contract.EnvGroupRank:      strconv.Itoa(group),
		contract.EnvNodeRank:       strconv.Itoa(group),
		contract.EnvNumNodes:       strconv.Itoa(w.NNodes),
		contract.EnvMasterAddr:     w.MasterAddr,
		contract.EnvMasterPort:     strconv.Itoa(w.MasterPort),
		contract.EnvStoreAddr:      w.StoreAddr,
		contract.EnvRunID:          c.RunID,
		contract.EnvToken:          c.Token,
		contract.EnvRestartCount:   strconv.Itoa(restart),
		contract.EnvMaxRestarts:    strconv.Itoa(c.MaxRestarts),
		contract.EnvTERestartCount: strconv.Itoa(restart),
		contract.EnvTEMaxRestarts:  strconv.Itoa(c.MaxRestarts),
		contract.EnvTERunID:        c.RunID,
		// The store at MASTER_PORT is the ranks' own (torch's rank 0 makes it).
		contract.EnvTEUseAgent: "False",
	}
	if c.Elastic() {
		contract.Elastic{Base: w.Base, PrevNodes: w.PrevNodes, PrevSize: w.PrevSize, Reason: w.Reason}.Set(set)
	}
	env := make([]string, 0, len(base)+len(set)+2)
	has := map[string]bool{}
	for _, kv := range base {
		k, _, _ := strings.Cut(kv, "=")
		has[k] = true
		if _, over := set[k]; over || k == contract.EnvHostStore || elasticEnv[k] {
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
