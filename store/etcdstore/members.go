package etcdstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
)

func (s *Store) memberKey(node int) string { return s.pfx + memberDir + strconv.Itoa(node) }

// joinMembers creates this agent's member key, bound to a lease of its own
// that it keeps alive until Close. A key held by another live agent is a
// duplicate node rank; one a killed agent left behind lapses within
// MemberTTL, so Open waits that long for it before it calls it a duplicate.
func (s *Store) joinMembers(ctx context.Context) error {
	key := s.memberKey(s.o.Node)
	deadline := time.Now().Add(2*s.o.MemberTTL + time.Second)
	for {
		id, holder, err := s.claimMember(ctx, key)
		if err != nil {
			return explain(s.o, err)
		}
		if id != 0 {
			s.mu.Lock()
			s.member = id
			s.mu.Unlock()
			s.wg.Add(1)
			go s.keepMember(key, id)
			return nil
		}
		if time.Now().After(deadline) || holder == "" {
			return fmt.Errorf("etcd: node rank %d of run %s is already held by another agent (%s): give each agent its own --node-rank, or this run another --rdzv-id",
				s.o.Node, strings.TrimSuffix(strings.TrimPrefix(s.pfx, "/pplaunch/"), "/"), holder)
		}
		wctx, cancel := context.WithDeadline(ctx, deadline)
		for range s.cli.Watch(wctx, key) { // until it goes, or the deadline
			break
		}
		cancel()
	}
}

// claimMember puts key under a new lease if it is absent; otherwise it
// returns the holder's value (and revokes the lease it made).
func (s *Store) claimMember(ctx context.Context, key string) (clientv3.LeaseID, string, error) {
	var g *clientv3.LeaseGrantResponse
	_, err := retrying(ctx, func() (err error) { // a lease granted twice: the spare one lapses
		g, err = s.cli.Grant(ctx, int64((s.o.MemberTTL+time.Second-1)/time.Second))
		return err
	})
	if err != nil {
		return 0, "", err
	}
	var r *clientv3.TxnResponse
	ambiguous, err := retrying(ctx, func() (err error) {
		r, err = s.cli.Txn(ctx).If(clientv3.Compare(clientv3.Version(key), "=", 0)).
			Then(clientv3.OpPut(key, s.o.Info, clientv3.WithLease(g.ID))).Else(clientv3.OpGet(key)).Commit()
		return err
	})
	if err != nil {
		return 0, "", err
	}
	kvs := r.Responses[0].GetResponseRange().GetKvs()
	if r.Succeeded || ambiguous && len(kvs) > 0 && kvs[0].Lease == int64(g.ID) {
		return g.ID, "", nil // (or an attempt that seemed to fail put it)
	}
	s.cli.Revoke(ctx, g.ID)
	holder := "?"
	if len(kvs) > 0 {
		holder = string(kvs[0].Value)
	}
	if holder == leftValue {
		holder = "an agent leaving now"
	}
	return 0, holder, nil
}

// keepMember keeps the member lease alive. A lease that lapsed anyway (this
// agent was stopped for longer than MemberTTL: Ctrl-Z) is replaced and the
// key put again, so the others see the node back.
func (s *Store) keepMember(key string, id clientv3.LeaseID) {
	defer s.wg.Done()
	for {
		ch, err := s.cli.KeepAlive(s.ctx, id)
		if err == nil {
			for range ch {
			}
		}
		for s.ctx.Err() == nil {
			g, err := s.cli.Grant(s.ctx, int64((s.o.MemberTTL+time.Second-1)/time.Second))
			if err == nil {
				if _, err = s.cli.Put(s.ctx, key, s.o.Info, clientv3.WithLease(g.ID)); err == nil {
					id = g.ID
					s.mu.Lock()
					s.member = id
					s.mu.Unlock()
					break
				}
			}
			select {
			case <-s.ctx.Done():
			case <-time.After(time.Second): // etcd unreachable: try again
			}
		}
		if s.ctx.Err() != nil {
			return
		}
	}
}

// joinRun binds this agent to the run lease, creating it when the run has
// none (or its lease lapsed), and keeps it alive until Close.
func (s *Store) joinRun(ctx context.Context) error {
	key := s.pfx + leaseKey
	for attempt := 0; ; attempt++ {
		id, err := s.runLease(ctx, key)
		if err != nil {
			return explain(s.o, err)
		}
		if _, err := s.cli.KeepAliveOnce(ctx, id); err != nil {
			if !errors.Is(err, rpctypes.ErrLeaseNotFound) || attempt > 10 {
				return explain(s.o, err)
			}
			// The run's last agent went an instant ago: start afresh.
			s.cli.Txn(ctx).If(clientv3.Compare(clientv3.Value(key), "=", strconv.FormatInt(int64(id), 16))).
				Then(clientv3.OpDelete(key)).Commit()
			continue
		}
		s.run = id
		ch, err := s.cli.KeepAlive(s.ctx, id)
		if err != nil {
			return explain(s.o, err)
		}
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			for range ch {
			}
		}()
		return nil
	}
}

// runLease returns the run lease named at key, or makes one and names it
// there. Every agent but the first finds it with one read: a grant, a
// failed transaction and a revoke would be three writes through etcd's log
// (each a disk sync) for every agent that joins.
func (s *Store) runLease(ctx context.Context, key string) (clientv3.LeaseID, error) {
	if r, err := s.cli.Get(ctx, key); err != nil {
		return 0, err
	} else if len(r.Kvs) > 0 {
		return parseLease(key, r.Kvs[0].Value)
	}
	g, err := s.cli.Grant(ctx, int64((s.o.RunTTL+time.Second-1)/time.Second))
	if err != nil {
		return 0, err
	}
	mine := strconv.FormatInt(int64(g.ID), 16)
	r, err := s.cli.Txn(ctx).If(clientv3.Compare(clientv3.Version(key), "=", 0)).
		Then(clientv3.OpPut(key, mine, clientv3.WithLease(g.ID))).Else(clientv3.OpGet(key)).Commit()
	if err != nil {
		return 0, err
	}
	if r.Succeeded {
		return g.ID, nil
	}
	s.cli.Revoke(ctx, g.ID)
	kvs := r.Responses[0].GetResponseRange().GetKvs()
	if len(kvs) == 0 {
		return 0, fmt.Errorf("the run's lease key %s vanished while read", key)
	}
	return parseLease(key, kvs[0].Value)
}

func parseLease(key string, v []byte) (clientv3.LeaseID, error) {
	id, err := strconv.ParseInt(string(v), 16, 64)
	if err != nil {
		return 0, fmt.Errorf("the run's lease key %s holds %q, not a lease id (was it written by another program?)", key, v)
	}
	return clientv3.LeaseID(id), nil
}

// MemberEvent is a change of the run's membership.
type MemberEvent struct {
	Node   int
	Kind   MemberChange
	Holder string // the member key's value (Joined)
}

// MemberChange is what happened to a member.
type MemberChange int

const (
	Joined MemberChange = iota // its key appeared (again)
	Left                       // its agent closed the store
	Lapsed                     // its lease lapsed: the agent died or stopped
)

// Members reports every change of the membership after now to f, until ctx
// ends. A member that left on purpose is reported Left, never Lapsed.
func (s *Store) Members(ctx context.Context, f func(MemberEvent)) error {
	dir := s.pfx + memberDir
	r, err := s.cli.Get(ctx, dir, clientv3.WithPrefix())
	if err != nil {
		return fmt.Errorf("etcd: read the members: %w", err)
	}
	left := map[int]bool{}
	for _, kv := range r.Kvs {
		if n, err := strconv.Atoi(strings.TrimPrefix(string(kv.Key), dir)); err == nil && string(kv.Value) == leftValue {
			left[n] = true
		}
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	for wr := range s.cli.Watch(wctx, dir, clientv3.WithPrefix(), clientv3.WithRev(r.Header.Revision+1)) {
		if err := wr.Err(); err != nil {
			return fmt.Errorf("etcd: watch the members: %w", err)
		}
		for _, ev := range wr.Events {
			n, err := strconv.Atoi(strings.TrimPrefix(string(ev.Kv.Key), dir))
			if err != nil {
				continue
			}
			if e, ok := memberChange(ev, n, left); ok {
				f(e)
			}
		}
	}
	return ctx.Err()
}

// memberChange is what the watch event ev on node n's member key means;
// left holds the nodes whose agents said they leave.
func memberChange(ev *clientv3.Event, n int, left map[int]bool) (MemberEvent, bool) {
	switch {
	case ev.Type == mvccpb.PUT && string(ev.Kv.Value) == leftValue:
		left[n] = true
		return MemberEvent{Node: n, Kind: Left}, true
	case ev.Type == mvccpb.PUT:
		delete(left, n)
		return MemberEvent{Node: n, Kind: Joined, Holder: string(ev.Kv.Value)}, true
	case left[n]:
		delete(left, n)
		return MemberEvent{}, false
	}
	return MemberEvent{Node: n, Kind: Lapsed}, true
}
