package etcdstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/pplaunch/pplaunch/store/etcdstore/gateway"
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
		for range s.cli.Watch(wctx, gateway.WatchRequest{Key: []byte(key)}) { // until it goes, or the deadline
			break
		}
		cancel()
	}
}

// claimMember puts key under a new lease if it is absent; otherwise it
// returns the holder's value (and revokes the lease it made).
func (s *Store) claimMember(ctx context.Context, key string) (int64, string, error) {
	var id int64
	_, err := retrying(ctx, func() (err error) { // a lease granted twice: the spare one lapses
		id, err = s.cli.Grant(ctx, seconds(s.o.MemberTTL))
		return err
	})
	if err != nil {
		return 0, "", err
	}
	var r *gateway.TxnResponse
	ambiguous, err := retrying(ctx, func() (err error) {
		r, err = s.cli.Txn(ctx, putElseGet(gateway.VersionIs(key, 0), putLeased(key, s.o.Info, id)))
		return err
	})
	if err != nil {
		return 0, "", err
	}
	kvs := r.Kvs(0)
	if r.Succeeded || ambiguous && len(kvs) > 0 && kvs[0].Lease == id {
		return id, "", nil // (or an attempt that seemed to fail put it)
	}
	s.cli.Revoke(ctx, id)
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
func (s *Store) keepMember(key string, id int64) {
	defer s.wg.Done()
	for {
		s.cli.KeepAlive(s.ctx, id, seconds(s.o.MemberTTL)) // until Close, or the lease is gone
		for s.ctx.Err() == nil {
			g, err := s.cli.Grant(s.ctx, seconds(s.o.MemberTTL))
			if err == nil {
				if _, err = s.cli.Put(s.ctx, key, s.o.Info, g); err == nil {
					id = g
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
		ttl, err := s.cli.KeepAliveOnce(ctx, id)
		if err != nil {
			if !errors.Is(err, gateway.ErrLeaseNotFound) || attempt > 10 {
				return explain(s.o, err)
			}
			// The run's last agent went an instant ago: start afresh.
			s.cli.Txn(ctx, gateway.TxnRequest{Compare: []gateway.Compare{gateway.ValueIs(key, []byte(strconv.FormatInt(id, 16)))},
				Success: []gateway.RequestOp{{Delete: &gateway.DeleteRangeRequest{Key: []byte(key)}}}})
			continue
		}
		s.run = id
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.cli.KeepAlive(s.ctx, id, ttl) // until Close, or the lease is gone
		}()
		return nil
	}
}

// runLease returns the run lease named at key, or makes one and names it
// there. Every agent but the first finds it with one read: a grant, a
// failed transaction and a revoke would be three writes through etcd's log
// (each a disk sync) for every agent that joins.
func (s *Store) runLease(ctx context.Context, key string) (int64, error) {
	if r, err := s.cli.Get(ctx, key); err != nil {
		return 0, err
	} else if len(r.Kvs) > 0 {
		return parseLease(key, r.Kvs[0].Value)
	}
	id, err := s.cli.Grant(ctx, seconds(s.o.RunTTL))
	if err != nil {
		return 0, err
	}
	r, err := s.cli.Txn(ctx, putElseGet(gateway.VersionIs(key, 0), putLeased(key, strconv.FormatInt(id, 16), id)))
	if err != nil {
		return 0, err
	}
	if r.Succeeded {
		return id, nil
	}
	s.cli.Revoke(ctx, id)
	kvs := r.Kvs(0)
	if len(kvs) == 0 {
		return 0, fmt.Errorf("the run's lease key %s vanished while read", key)
	}
	return parseLease(key, kvs[0].Value)
}

// seconds is d as a lease's time to live, rounded up.
func seconds(d time.Duration) int64 { return int64((d + time.Second - 1) / time.Second) }

// putLeased is an operation that writes value at key, bound to lease.
func putLeased(key, value string, lease int64) gateway.RequestOp {
	return gateway.RequestOp{Put: &gateway.PutRequest{Key: []byte(key), Value: []byte(value), Lease: lease}}
}

func parseLease(key string, v []byte) (int64, error) {
	id, err := strconv.ParseInt(string(v), 16, 64)
	if err != nil {
		return 0, fmt.Errorf("the run's lease key %s holds %q, not a lease id (was it written by another program?)", key, v)
	}
	return id, nil
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
	r, err := s.cli.Range(ctx, gateway.Prefix(dir))
	if err != nil {
		return s.fail("read", memberDir, err)
	}
	left := map[int]bool{}
	for _, kv := range r.Kvs {
		if n, err := strconv.Atoi(strings.TrimPrefix(string(kv.Key), dir)); err == nil && string(kv.Value) == leftValue {
			left[n] = true
		}
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	for wr := range s.cli.Watch(wctx, watchUnder(dir, r.Header.Revision+1)) {
		if wr.Err != nil {
			return s.fail("watch", memberDir, wr.Err)
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
func memberChange(ev gateway.Event, n int, left map[int]bool) (MemberEvent, bool) {
	switch {
	case ev.Type == gateway.Put && string(ev.Kv.Value) == leftValue:
		left[n] = true
		return MemberEvent{Node: n, Kind: Left}, true
	case ev.Type == gateway.Put:
		delete(left, n)
		return MemberEvent{Node: n, Kind: Joined, Holder: string(ev.Kv.Value)}, true
	case left[n]:
		delete(left, n)
		return MemberEvent{}, false
	}
	return MemberEvent{Node: n, Kind: Lapsed}, true
}
