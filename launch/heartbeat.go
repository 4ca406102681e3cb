package launch

import (
	"context"
	"strconv"
	"time"
)

// Agents of a job on several nodes heartbeat through the store: each adds 1
// to its counter "hb/NODE" every heartbeatInterval and reads the others'. A
// node whose counter has not moved for heartbeatMisses reads in a row is lost
// (its agent was killed, its machine went down): it is named as the root
// cause within heartbeatDeadline, before the consequences on the other nodes
// (their ranks seeing their peers vanish) are taken for the cause.
//
// heartbeatInterval: half a second costs each node two small store requests
// per node and second, nothing beside a training step, and keeps detection
// within a few seconds. heartbeatMisses: 6 (3 s) rides out a store host or
// agent that is not scheduled for a while (an overloaded node, a long GC
// pause, a burst of checkpoint I/O) without calling a live node lost.
const (
	heartbeatInterval = 500 * time.Millisecond
	heartbeatMisses   = 6
	heartbeatDeadline = heartbeatInterval * heartbeatMisses
)

// heartbeat beats for this node and watches the others until ctx ends; it
// sends each lost node once on lost.
func (a *agent) heartbeat(ctx context.Context, lost chan<- int) {
	t := time.NewTicker(heartbeatInterval)
	defer t.Stop()
	last := make([]int64, a.c.NNodes)
	misses := make([]int, a.c.NNodes)
	reported := make([]bool, a.c.NNodes)
	for {
		rctx, cancel := context.WithTimeout(ctx, heartbeatInterval)
		_, err := a.client.Add(rctx, "hb/"+strconv.Itoa(a.c.NodeRank), 1)
		// Without our own beat through, the store is what is slow: judge no one.
		for n := 0; err == nil && n < a.c.NNodes; n++ {
			if n == a.c.NodeRank || reported[n] {
				continue
			}
			v, gerr := a.client.Add(rctx, "hb/"+strconv.Itoa(n), 0)
			if gerr != nil {
				break
			}
			if v != last[n] {
				last[n], misses[n] = v, 0
				continue
			}
			if misses[n]++; misses[n] >= heartbeatMisses {
				reported[n] = true
				select {
				case lost <- n:
				case <-ctx.Done():
				}
			}
		}
		cancel()
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
