package launch

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"time"
)

// The rendezvous of an elastic job (--nnodes MIN:MAX). Every agent but node
// 0's asks for a place ("elastic/joins" counts the requests, and
// "elastic/join/K" holds the K-th); node 0 answers each ("elastic/admit/NODE":
// the round it takes part from) when it forms a round (planRound). In each
// round every member announces its rank count, as in a fixed job, and node 0
// publishes the world: the members in order, their counts, the master port,
// the first round's size (the batch's reference) and what changed since the
// last round. A node that asks while a world runs is seen by node 0's
// attempt (evJoin): the ranks stop at a step boundary with a checkpoint, and
// the next round admits it.

// elasticRecord is the part of a round's world record only an elastic job
// has.
type elasticRecord struct {
	Members   []int  `json:"members"`
	Base      int    `json:"base"`                 // the first round's world size
	PrevNodes int    `json:"prev_nodes,omitempty"` // the last round's, when the nodes changed
	PrevSize  int    `json:"prev_size,omitempty"`
	Reason    string `json:"reason,omitempty"`
}

// nodeIDs are the nodes of the job now: an elastic job's current members,
// else 0..nnodes-1.
func (a *agent) nodeIDs() []int {
	if a.c.Elastic() {
		a.mu.Lock()
		defer a.mu.Unlock()
		if a.members != nil {
			return slices.Clone(a.members)
		}
	}
	ids := make([]int, a.c.NNodes)
	for i := range ids {
		ids[i] = i
	}
	return ids
}

// askToJoin is a node other than 0 asking for its place: it returns the
// round it takes part from, once node 0 admits it.
func (a *agent) askToJoin(ctx context.Context) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, a.c.RdzvTimeout)
	defer cancel()
	if err := a.agree(ctx); err != nil {
		return 0, err
	}
	k, err := a.client.Add(ctx, "elastic/joins", 1)
	if err != nil {
		return 0, fmt.Errorf("ask to join: %w", err)
	}
	b, _ := json.Marshal(joinRequest{Node: a.c.NodeRank, NProc: a.c.NProc})
	if err := a.client.Set(ctx, "elastic/join/"+strconv.FormatInt(k, 10), b); err != nil {
		return 0, fmt.Errorf("ask to join: %w", err)
	}
	if err := a.waitUnlessRefused(ctx, "elastic/admit/"+strconv.Itoa(a.c.NodeRank)); err != nil {
		return 0, fmt.Errorf("node %d asked to join at %s, but node 0 gave it no place within --rdzv-timeout %v (the world holds --nnodes %s): %w",
			a.c.NodeRank, joinHostPort(a.c.StoreHost, a.c.StorePort), a.c.RdzvTimeout, a.c.nodeCount(), err)
	}
	v, err := a.client.Get(ctx, "elastic/admit/"+strconv.Itoa(a.c.NodeRank))
	if err != nil {
		return 0, err
	}
	var adm admission
	if err := json.Unmarshal(v, &adm); err != nil {
		return 0, fmt.Errorf("unreadable admission %q from node 0: %v", v, err)
	}
	if adm.Refused != "" {
		return 0, fmt.Errorf("node 0 refused this node: %s", adm.Refused)
	}
	return adm.Round, nil
}

// watchJoins (node 0) feeds the join requests to a.joins, in order, until
// ctx ends.
func (a *agent) watchJoins(ctx context.Context) {
	for k := 1; ; k++ {
		v, err := a.client.Get(ctx, "elastic/join/"+strconv.Itoa(k))
		if err != nil {
			return
		}
		var j joinRequest
		if err := json.Unmarshal(v, &j); err != nil || j.NProc < 1 {
			a.logf("ignoring an unreadable join request %q", v)
			continue
		}
		select {
		case a.joins <- j:
		case <-ctx.Done():
			return
		}
	}
}

// elasticRendezvous forms round restart's world of an elastic job.
func (a *agent) elasticRendezvous(ctx context.Context, restart int, w World) (World, error) {
	pfx := fmt.Sprintf("rdzv/%d/", restart)
	start := time.Now()
	if a.c.NodeRank == 0 {
		if restart == 0 {
			if err := a.agree(ctx); err != nil {
				return w, err
			}
		}
		members, err := a.admitRound(ctx, restart)
		if err != nil {
			return w, err
		}
		if err := a.announce(ctx, pfx); err != nil {
			return w, err
		}
		if err := a.publishRound(ctx, pfx, members); err != nil {
			return w, fmt.Errorf("rendezvous of round %d: %w", restart, err)
		}
	} else if err := a.announce(ctx, pfx); err != nil {
		return w, err
	}
	var rec struct {
		worldRecord
		elasticRecord
	}
	if err := a.waitUnlessRefused(ctx, pfx+"world"); err != nil {
		return w, fmt.Errorf("rendezvous of round %d at %s: %w", restart, w.StoreAddr, err)
	}
	v, err := a.client.Get(ctx, pfx+"world")
	if err == nil {
		err = json.Unmarshal(v, &rec)
	}
	if err != nil {
		return w, fmt.Errorf("rendezvous of round %d: reading node 0's world record: %v", restart, err)
	}
	if w, err = rec.worldRecord.elasticWorld(w, rec.elasticRecord, a.c.NodeRank); err != nil {
		return w, fmt.Errorf("rendezvous of round %d: %w", restart, err)
	}
	a.mu.Lock()
	a.members = rec.Members
	a.mu.Unlock()
	a.last = w
	a.logf("round %d: a world of %d ranks on %s (%s) in %v; this node's ranks are %d..%d",
		restart, w.Size, count(w.NNodes, "node"), nodeList(rec.Members), time.Since(start).Round(time.Millisecond), w.FirstRank, w.FirstRank+a.c.NProc-1)
	return w, nil
}

// announce puts this node's rank count in the round (prefix pfx).
func (a *agent) announce(ctx context.Context, pfx string) error {
	mine := []byte(strconv.Itoa(a.c.NProc))
	if cur, ok, err := a.client.CompareAndSet(ctx, pfx+"node/"+strconv.Itoa(a.c.NodeRank), nil, mine); err != nil {
		return fmt.Errorf("rendezvous: %w", err)
	} else if !ok {
		return fmt.Errorf("rendezvous: node %d joined twice (the other has %s ranks): give each agent its own --node-rank", a.c.NodeRank, cur)
	}
	return nil
}

// admitRound (node 0) decides round restart's members and answers the
// join requests it admits or refuses. The first round waits for MAX nodes,
// or for MIN and lastCall more.
func (a *agent) admitRound(ctx context.Context, restart int) ([]int, error) {
	prev := a.nodeIDs()
	if restart == 0 {
		prev = []int{0}
		if err := a.awaitFirstRound(ctx); err != nil {
			return nil, err
		}
	}
	for drained := false; !drained; {
		select {
		case j := <-a.joins:
			a.pending = append(a.pending, j)
		default:
			drained = true
		}
	}
	plan, err := planRound(prev, a.gone, a.pending, a.c.MinNodes, a.c.NNodes)
	if err != nil {
		return nil, err
	}
	a.pending = plan.Pending
	answer := func(node int, adm admission) error {
		b, _ := json.Marshal(adm)
		return a.client.Set(ctx, "elastic/admit/"+strconv.Itoa(node), b)
	}
	for n, why := range plan.Refused {
		if err := answer(n, admission{Refused: why}); err != nil {
			return nil, err
		}
	}
	for _, j := range plan.Admitted {
		if err := answer(j.Node, admission{Round: restart}); err != nil {
			return nil, err
		}
	}
	return plan.Members, nil
}

// awaitFirstRound (node 0) collects join requests until the first round
// forms (firstRoundForms) or --rdzv-timeout passes.
func (a *agent) awaitFirstRound(ctx context.Context) error {
	last := time.Now()
	for {
		asked := 1 + len(a.pending) // node 0 itself
		if firstRoundForms(asked, a.c.MinNodes, a.c.NNodes, last, time.Now()) {
			return nil
		}
		var due <-chan time.Time
		if asked >= a.c.MinNodes {
			due = time.After(time.Until(last.Add(lastCall)))
		}
		select {
		case j := <-a.joins:
			a.pending, last = append(a.pending, j), time.Now()
		case <-due:
		case <-ctx.Done():
			return fmt.Errorf("first round: %d of --nnodes %s nodes asked to join within --rdzv-timeout %v (not started, or started with a different PPLAUNCH_TOKEN, --rdzv-id or --rdzv-endpoint?)",
				asked, a.c.nodeCount(), a.c.RdzvTimeout)
		}
	}
}

// publishRound (node 0) waits for the members' rank counts and publishes
// the world. A member lost meanwhile (heartbeat) is left out, down to MIN.
func (a *agent) publishRound(ctx context.Context, pfx string, members []int) error {
	port, err := freePort("")
	if err != nil {
		return err
	}
	if members, err = a.awaitMembers(ctx, pfx, members); err != nil {
		return err
	}
	rec := worldRecord{MasterPort: port}
	for i, n := range members {
		v, err := a.client.Get(ctx, pfx+"node/"+strconv.Itoa(n))
		if err != nil {
			return err
		}
		np, err := strconv.Atoi(string(v))
		if err != nil || np < 1 {
			return fmt.Errorf("node %d (the %d-th member) announced %q ranks", n, i, v)
		}
		rec.Ranks = append(rec.Ranks, np)
	}
	el := elasticRecord{Members: members, Base: a.base}
	size := 0
	for _, n := range rec.Ranks {
		size += n
	}
	if el.Base == 0 {
		el.Base, a.base = size, size
	}
	if a.last.Size > 0 {
		if why := relayoutReason(a.last.Members, members); why != "" {
			el.PrevNodes, el.PrevSize, el.Reason = len(a.last.Members), a.last.Size, why
		}
	}
	b, _ := json.Marshal(struct {
		worldRecord
		elasticRecord
	}{rec, el})
	return a.client.Set(ctx, pfx+"world", b)
}

// awaitMembers (node 0) waits for every member's rank count in the round
// (prefix pfx). A member lost meanwhile (heartbeat) is left out, down to MIN:
// it returns the members that announced.
func (a *agent) awaitMembers(ctx context.Context, pfx string, members []int) ([]int, error) {
	for {
		keys := make([]string, len(members))
		for i, n := range members {
			keys[i] = pfx + "node/" + strconv.Itoa(n)
		}
		wctx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- a.waitUnlessRefused(wctx, keys...) }()
		lost := -1
		var err error
		select {
		case err = <-done:
		case lost = <-a.lost:
		}
		cancel()
		if lost < 0 {
			if err != nil {
				return members, fmt.Errorf("%w; %s", err, neverJoined(a.absent(keys)))
			}
			return members, nil
		}
		<-done
		a.gone[lost] = true
		if members = slices.DeleteFunc(members, func(n int) bool { return n == lost }); len(members) < a.c.MinNodes {
			return members, fmt.Errorf("node %d was lost while the world re-formed: %s left (%s), fewer than --nnodes %s allows: stopping",
				lost, count(len(members), "node"), nodeList(members), a.c.nodeCount())
		}
	}
}

// elasticWorld fills w from the round's record for node: its place among
// the members, its first global rank, and the size.
func (rec worldRecord) elasticWorld(w World, el elasticRecord, node int) (World, error) {
	pos := slices.Index(el.Members, node)
	if pos < 0 {
		return w, fmt.Errorf("node 0 left this node (%d) out of the world of nodes %s (was it taken for lost?)", node, nodeList(el.Members))
	}
	if len(rec.Ranks) != len(el.Members) {
		return w, fmt.Errorf("node 0 published %d rank counts for %d members", len(rec.Ranks), len(el.Members))
	}
	w.NNodes = len(el.Members)
	w, err := rec.world(w, pos)
	w.GroupRank, w.Members, w.Base = pos, el.Members, el.Base
	w.PrevNodes, w.PrevSize, w.Reason = el.PrevNodes, el.PrevSize, el.Reason
	return w, err
}
