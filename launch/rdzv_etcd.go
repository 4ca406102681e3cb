package launch

import (
	"context"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/pplaunch/pplaunch/store/etcdstore"
)

// etcdReachWithin bounds the first contact with etcd: unlike node 0's store,
// which may start after the others, an etcd cluster is there before the job,
// so one that does not answer is a wrong endpoint, not a late one.
const etcdReachWithin = 30 * time.Second

// storeAddrKey is where node 0 publishes the ranks' store in etcd.
const storeAddrKey = "store/addr"

// dialEtcd connects the agent to etcd, as node NodeRank of the run's
// membership, with the run's keys under /pplaunch/RUN-ID/.
func (a *agent) dialEtcd(ctx context.Context) error {
	e := a.c.Etcd
	host, _ := os.Hostname()
	s, err := etcdstore.Open(ctx, etcdstore.Options{Endpoints: e.Endpoints, Prefix: "/pplaunch/" + a.c.RunID + "/",
		Node: a.c.NodeRank, Info: fmt.Sprintf("%s pid %d", host, os.Getpid()),
		CACert: e.CACert, Cert: e.Cert, Key: e.Key, User: e.User, Password: e.Password,
		ReachWithin: min(a.c.RdzvTimeout, etcdReachWithin), MemberTTL: heartbeatDeadline})
	if err != nil {
		return fmt.Errorf("node %d joins the rendezvous: %w", a.c.NodeRank, err)
	}
	a.client, a.etcd = s, s
	return nil
}

// meetingPlace is where the agents meet, for messages: etcd's endpoints, or
// the store at storeAddr.
func (a *agent) meetingPlace(storeAddr string) string {
	if a.c.Etcd != nil {
		return "etcd " + strings.Join(a.c.Etcd.Endpoints, ",") + " under /pplaunch/" + a.c.RunID + "/"
	}
	return storeAddr
}

// shareStoreAddr publishes the ranks' store address (node 0) or reads it
// (the others, who then know node 0's host for MASTER_ADDR too).
func (a *agent) shareStoreAddr(ctx context.Context, addr string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, a.c.RdzvTimeout)
	defer cancel()
	if a.c.NodeRank == 0 {
		if err := a.client.Set(ctx, storeAddrKey, []byte(addr)); err != nil {
			return "", fmt.Errorf("node 0 publishes its store's address: %w", err)
		}
		return addr, nil
	}
	v, err := a.client.Get(ctx, storeAddrKey)
	if err != nil {
		return "", fmt.Errorf("node %d waits for node 0 to publish its store's address in etcd: %w; node 0 never came (not started, or started with another --rdzv-id?)", a.c.NodeRank, err)
	}
	host, _, err := net.SplitHostPort(string(v))
	if err != nil {
		return "", fmt.Errorf("node 0 published %q as its store's address: %v", v, err)
	}
	a.c.StoreHost = host
	return string(v), nil
}

// watchNodes learns which nodes are lost or suspended until ctx ends: from
// the heartbeat counters in the built-in store, or from etcd's membership
// leases and watches.
func (a *agent) watchNodes(ctx context.Context) {
	s := a.etcd
	if s == nil {
		a.heartbeat(ctx, a.lost, a.susp)
		return
	}
	nodes := newEtcdNodes(a.c.NodeRank)
	go func() {
		err := s.Values(ctx, "susp/", func(key string, value []byte) {
			node, suspended, episode, ok := nodes.suspension(key, value)
			if ok {
				a.susp.set(node, suspended, episode)
			}
		})
		if err != nil && ctx.Err() == nil {
			a.logf("watching the other nodes' suspensions in etcd stopped: %v", err)
		}
	}()
	err := s.Members(ctx, func(e etcdstore.MemberEvent) {
		if nodes.lostNow(e) {
			a.logf("node %d's etcd lease lapsed: its agent kept it alive for no %v", e.Node, heartbeatDeadline)
			select {
			case a.lost <- e.Node:
			case <-ctx.Done():
			}
		}
	})
	if err != nil && ctx.Err() == nil {
		a.logf("watching the membership in etcd stopped (a lost node will not be seen): %v", err)
	}
}

// etcdNodes is what an agent knows of the other nodes from etcd's watches:
// which are suspended (job control: their leases may lapse while they are
// stopped, which is not a loss) and which it called lost.
type etcdNodes struct {
	self      int
	suspended map[int]bool
	lost      map[int]bool
}

func newEtcdNodes(self int) *etcdNodes {
	return &etcdNodes{self: self, suspended: map[int]bool{}, lost: map[int]bool{}}
}

// lostNow says whether e makes another node lost, the first time only.
func (n *etcdNodes) lostNow(e etcdstore.MemberEvent) bool {
	if e.Kind != etcdstore.Lapsed || e.Node == n.self || n.suspended[e.Node] || n.lost[e.Node] {
		return false
	}
	n.lost[e.Node] = true
	return true
}

// suspension reads a change of "susp/NODE" (a counter: odd while the node is
// suspended) as heartbeat.go writes it.
func (n *etcdNodes) suspension(key string, value []byte) (node int, suspended bool, episode int64, ok bool) {
	node, err := strconv.Atoi(strings.TrimPrefix(key, "susp/"))
	v, verr := strconv.ParseInt(string(value), 10, 64)
	if err != nil || verr != nil || node == n.self || n.lost[node] {
		return 0, false, 0, false
	}
	suspended = v%2 == 1
	n.suspended[node] = suspended
	return node, suspended, (v + 1) / 2, true
}
