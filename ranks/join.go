package ranks

import (
	"context"

	"github.com/pplaunch/pplaunch/collective"
)

// JoinTCP opens the job's TCP communicator from r, with opts: the one every
// rank job (train, sample, the communication benchmarks) opens.
func (r *Rank) JoinTCP(ctx context.Context, opts collective.TCPOptions) (collective.Comm, error) {
	return collective.JoinTCP(ctx, r.Store, r.StoreAddr, r.Token, r.Rank, r.WorldSize, opts)
}
