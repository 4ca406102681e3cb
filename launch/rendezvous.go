package launch

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// rendezvous forms the world of attempt restart: each node announces its rank
// count; once all nodes have, each knows its ranks' global numbers.
func (a *agent) rendezvous(ctx context.Context, restart int, storeAddr string) (World, error) {
	w := World{NNodes: a.c.NNodes, MasterAddr: a.c.StoreHost, StoreAddr: storeAddr}
	if a.c.NNodes == 1 {
		port, err := freePort(a.c.StoreHost)
		if err != nil {
			return w, err
		}
		w.Size, w.MasterPort = a.c.NProc, port
		return w, nil
	}
	ctx, cancel := context.WithTimeout(ctx, a.c.RdzvTimeout)
	defer cancel()
	if a.c.Elastic() {
		return a.elasticRendezvous(ctx, restart, w)
	}
	if restart == 0 {
		if err := a.agree(ctx); err != nil {
			return w, err
		}
	}
	pfx := fmt.Sprintf("rdzv/%d/", restart)
	mine := []byte(strconv.Itoa(a.c.NProc))
	if cur, ok, err := a.client.CompareAndSet(ctx, pfx+"node/"+strconv.Itoa(a.c.NodeRank), nil, mine); err != nil {
		return w, fmt.Errorf("rendezvous: %w", err)
	} else if !ok {
		return w, fmt.Errorf("rendezvous: node rank %d joined twice (the other has %s ranks): give each agent its own --node-rank", a.c.NodeRank, cur)
	}
	keys := make([]string, a.c.NNodes)
	for i := range keys {
		keys[i] = pfx + "node/" + strconv.Itoa(i)
	}
	start := time.Now()
	rec, err := a.worldRecord(ctx, pfx, keys)
	if err != nil {
		return w, fmt.Errorf("rendezvous of %d nodes at %s (restart %d): %w; %s",
			a.c.NNodes, a.meetingPlace(storeAddr), restart, err, neverJoined(a.absent(keys)))
	}
	if w, err = rec.world(w, a.c.NodeRank); err != nil {
		return w, fmt.Errorf("rendezvous: %w", err)
	}
	if restart == 0 {
		a.logf("joined a world of %d ranks on %d nodes in %v; this node's ranks are %d..%d",
			w.Size, a.c.NNodes, time.Since(start).Round(time.Millisecond), w.FirstRank, w.FirstRank+a.c.NProc-1)
	}
	return w, nil
}

// worldRecord is what node 0 publishes once every node has announced its rank
// count: the counts in node order and the ranks' master port. Every other node
// waits for this one key rather than for every node's: with N nodes, the
// store then serves O(N) requests to form the world instead of O(N²) (each
// node reading each node's count), and wakes one waiter per node instead of
// N scans of N keys on every join.
type worldRecord struct {
	Ranks      []int `json:"ranks"`
	MasterPort int   `json:"master_port"`
}

// worldRecord returns the world of this attempt: node 0 waits for every
// node's count, reads them and publishes them; the others read what it
// published.
func (a *agent) worldRecord(ctx context.Context, pfx string, keys []string) (worldRecord, error) {
	var rec worldRecord
	if a.c.NodeRank != 0 {
		if err := a.waitUnlessRefused(ctx, pfx+"world"); err != nil {
			return rec, err
		}
		v, err := a.client.Get(ctx, pfx+"world")
		if err != nil {
			return rec, err
		}
		if err := json.Unmarshal(v, &rec); err != nil {
			return rec, fmt.Errorf("unreadable world record %q from node 0: %v", v, err)
		}
		return rec, nil
	}
	port, err := freePort("")
	if err != nil {
		return rec, err
	}
	if err := a.waitUnlessRefused(ctx, keys...); err != nil {
		return rec, err
	}
	rec.MasterPort = port
	for i, k := range keys {
		v, err := a.client.Get(ctx, k)
		if err != nil {
			return rec, err
		}
		n, err := strconv.Atoi(string(v))
		if err != nil || n < 1 {
			return rec, fmt.Errorf("node %d announced %q ranks", i, v)
		}
		rec.Ranks = append(rec.Ranks, n)
	}
	b, _ := json.Marshal(rec)
	return rec, a.client.Set(ctx, pfx+"world", b)
}

// world fills w from the record for node: its first global rank and the size.
func (rec worldRecord) world(w World, node int) (World, error) {
	if len(rec.Ranks) != w.NNodes {
		return w, fmt.Errorf("node 0 published %d nodes' rank counts, this node expects %d (--nnodes differs?)", len(rec.Ranks), w.NNodes)
	}
	for i, n := range rec.Ranks {
		if n < 1 {
			return w, fmt.Errorf("node 0 published %d ranks for node %d", n, i)
		}
		if i < node {
			w.FirstRank += n
		}
		w.Size += n
	}
	if rec.MasterPort < 1 || rec.MasterPort > 65535 {
		return w, fmt.Errorf("node 0 published master port %d", rec.MasterPort)
	}
	w.MasterPort = rec.MasterPort
	return w, nil
}

// missing lists which of keys are absent, for a timeout message.
func (a *agent) missing(keys []string) string { return fmt.Sprint(a.absent(keys)) }

// absent is which of keys the store does not hold.
func (a *agent) absent(keys []string) []string {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if a.etcd != nil {
		// One read, where each blocking Get would wait out its timeout.
		if out, err := a.etcd.Missing(ctx, keys...); err == nil {
			return out
		}
	}
	var out []string
	for _, k := range keys {
		qctx, qcancel := context.WithTimeout(ctx, 10*time.Millisecond)
		if _, err := a.client.Get(qctx, k); err != nil {
			out = append(out, k)
		}
		qcancel()
	}
	return out
}

// neverJoined says which nodes did not announce themselves at the
// rendezvous (absent holds their keys, "rdzv/R/node/N"), and why that
// happens: in a user's words, not the store's keys.
func neverJoined(absent []string) string {
	var nodes []string
	for _, k := range absent {
		nodes = append(nodes, k[strings.LastIndex(k, "/")+1:])
	}
	why := "(not started, or started with a different PPLAUNCH_TOKEN, --nnodes, --rdzv-id or --rdzv-endpoint?)"
	switch len(nodes) {
	case 0:
		return "every node joined, but node 0 did not publish the world (did its agent stop?)"
	case 1:
		return "node " + nodes[0] + " never joined " + why
	}
	return "nodes " + strings.Join(nodes, ", ") + " never joined " + why
}

// agreedFlags are the launcher flags every agent of a job must be given
// alike, with this node's values: a node that counts other nodes, restarts
// another number of times or names another run would wait for nodes that
// never come, or give up while the others restart.
func (a *agent) agreedFlags() [][2]string {
	return [][2]string{
		{"--nnodes", a.c.nodeCount().String()},
		{"--max-restarts", strconv.Itoa(a.c.MaxRestarts)},
		{"--rdzv-id", a.c.RunID},
	}
}

// flagRecord is the first agent's agreedFlags, in the store.
type flagRecord struct {
	Node  int         `json:"node"`
	Flags [][2]string `json:"flags"`
}

// refusedKey holds why the rendezvous was refused, for every node to see.
const refusedKey = "rdzv/refused"

// agree checks this node's agreedFlags against the first agent's; on a
// difference it tells every node (refusedKey) and returns an error naming
// the flag and both values.
func (a *agent) agree(ctx context.Context) error {
	mine, _ := json.Marshal(flagRecord{Node: a.c.NodeRank, Flags: a.agreedFlags()})
	cur, ok, err := a.client.CompareAndSet(ctx, "rdzv/flags", nil, mine)
	if err != nil {
		return fmt.Errorf("rendezvous: %w", err)
	}
	if ok {
		return nil
	}
	var first flagRecord
	if err := json.Unmarshal(cur, &first); err != nil {
		return fmt.Errorf("rendezvous: unreadable flags record %q: %v", cur, err)
	}
	if msg := flagMismatch(a.c.NodeRank, a.agreedFlags(), first); msg != "" {
		a.client.CompareAndSet(ctx, refusedKey, nil, []byte(msg))
		a.refused = true
		return fmt.Errorf("rendezvous refused: %s", msg)
	}
	return nil
}

// flagMismatch says how mine (node's) differs from first, or "".
func flagMismatch(node int, mine [][2]string, first flagRecord) string {
	theirs := map[string]string{}
	for _, kv := range first.Flags {
		theirs[kv[0]] = kv[1]
	}
	for _, kv := range mine {
		if v, ok := theirs[kv[0]]; ok && v != kv[1] {
			return fmt.Sprintf("%s differs between agents: node %d has %s %s, node %d has %s %s; give every agent the same %s",
				kv[0], node, kv[0], kv[1], first.Node, kv[0], v, kv[0])
		}
	}
	return ""
}

// waitUnlessRefused waits for keys, or returns the refusal another node
// stored (a node whose flags differ).
func (a *agent) waitUnlessRefused(ctx context.Context, keys ...string) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	refused := make(chan string, 1)
	go func() {
		if v, err := a.client.Get(ctx, refusedKey); err == nil {
			refused <- string(v)
		}
	}()
	done := make(chan error, 1)
	go func() { done <- a.client.Wait(ctx, keys...) }()
	select {
	case err := <-done:
		return err
	case msg := <-refused:
		a.refused = true
		return fmt.Errorf("refused by another node: %s", msg)
	}
}
