package launch

import (
	"context"
	"io"
	"strings"
	"time"
)

// SimulatedJoin is the rendezvous of one of many simulated agents in one
// process, for pplaunch bench rendezvous (bench.Joiner's form): node of
// nnodes, announcing nproc ranks, joins the store at storeAddr (a round's
// own, hosted by the caller) with token, as an agent with --rdzv-timeout
// timeout would, meeting the others in the etcd at etcd when it is not "".
// It returns the node's first rank, the world's size and how to leave it.
func SimulatedJoin(timeout time.Duration, etcd string) func(ctx context.Context, node, nnodes, nproc int, storeAddr, token string) (int, int, func(), error) {
	return func(ctx context.Context, node, nnodes, nproc int, storeAddr, token string) (int, int, func(), error) {
		// Each round hosts a store of its own: its address names the round's run.
		c := Config{NProc: nproc, NNodes: nnodes, NodeRank: node, StoreHost: "127.0.0.1",
			RunID: "bench-rendezvous-" + strings.ReplaceAll(storeAddr, ":", "-"), Token: token, RdzvTimeout: timeout, GracePeriod: time.Second}
		if etcd != "" {
			c.Etcd = &EtcdRendezvous{Endpoints: []string{etcd}}
		}
		j, err := Join(ctx, c, storeAddr, io.Discard)
		if err != nil {
			return 0, 0, nil, err
		}
		return j.World.FirstRank, j.World.Size, j.Leave, nil
	}
}
