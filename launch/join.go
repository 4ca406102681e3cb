package launch

import (
	"context"
	"errors"
	"io"
)

// Joined is an agent that has formed the world with the others and runs no
// ranks: what Join returns.
type Joined struct {
	World World
	a     *agent
}

// Join connects to the store at storeAddr (hosted by someone else: Join
// never hosts it) and runs the agents' rendezvous for node c.NodeRank of
// c.NNodes, exactly as Run's agent does before it starts its ranks. It is
// for measuring the rendezvous with many agents in one process; the log
// line goes to stderr. Leave must follow.
func Join(ctx context.Context, c Config, storeAddr string, stderr io.Writer) (*Joined, error) {
	if c.NNodes < 2 {
		return nil, errors.New("launch: join: the rendezvous needs at least 2 nodes")
	}
	a := &agent{c: c, out: &console{w: io.Discard}, err: &console{w: stderr}, gone: map[int]bool{}}
	if err := a.dialStore(ctx, storeAddr); err != nil {
		return nil, err
	}
	w, err := a.rendezvous(ctx, 0, storeAddr)
	if err != nil {
		a.closeStore()
		return nil, err
	}
	a.formed = true
	return &Joined{World: w, a: a}, nil
}

// Leave tells the others this agent is done (node 0 waits for every node, as
// Run's does) and closes its connection.
func (j *Joined) Leave() {
	j.a.leave()
	j.a.closeStore()
}
