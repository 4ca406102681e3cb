package etcdstore

import (
	"bytes"
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/pplaunch/pplaunch/store"
	"github.com/pplaunch/pplaunch/store/etcdstore/gateway"
)

var _ store.Store = (*Store)(nil)

// Set stores value under key, bound to the run lease.
func (s *Store) Set(ctx context.Context, key string, value []byte) error {
	_, err := retrying(ctx, func() error {
		_, err := s.cli.Put(ctx, s.pfx+key, string(value), s.run)
		return err
	})
	if err != nil {
		return s.fail("set", key, err)
	}
	return nil
}

// Get returns key's value, watching for it while it is absent.
func (s *Store) Get(ctx context.Context, key string) ([]byte, error) {
	r, err := s.cli.Get(ctx, s.pfx+key)
	if err != nil {
		return nil, s.fail("get", key, err)
	}
	if len(r.Kvs) > 0 {
		return nonNil(r.Kvs[0].Value), nil
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	for wr := range s.cli.Watch(wctx, gateway.WatchRequest{Key: []byte(s.pfx + key), StartRevision: r.Header.Revision + 1}) {
		if wr.Err != nil {
			return nil, s.fail("get", key, wr.Err)
		}
		for _, ev := range wr.Events {
			if ev.Type == gateway.Put {
				return nonNil(ev.Kv.Value), nil
			}
		}
	}
	return nil, s.fail("get", key, ctxErr(ctx))
}

// Wait blocks until every key exists: one read of their common prefix, then
// one watch on it, however many keys.
func (s *Store) Wait(ctx context.Context, keys ...string) error {
	if len(keys) == 0 {
		return nil
	}
	dir := s.pfx + commonPrefix(keys)
	missing := map[string]bool{}
	for _, k := range keys {
		missing[s.pfx+k] = true
	}
	r, err := s.cli.Range(ctx, keysUnder(dir))
	if err != nil {
		return s.fail("wait for", keys[0], err)
	}
	for _, kv := range r.Kvs {
		delete(missing, string(kv.Key))
	}
	if len(missing) == 0 {
		return nil
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	for wr := range s.cli.Watch(wctx, watchUnder(dir, r.Header.Revision+1)) {
		if wr.Err != nil {
			return s.fail("wait for", keys[0], wr.Err)
		}
		for _, ev := range wr.Events {
			if ev.Type == gateway.Put {
				delete(missing, string(ev.Kv.Key))
			}
		}
		if len(missing) == 0 {
			return nil
		}
	}
	return s.fail("wait for", fmt.Sprint(len(missing), " of ", len(keys), " keys"), ctxErr(ctx))
}

// Add adds delta to the decimal integer at key, as a compare-and-swap on
// the key's revision retried until no other writer came between.
func (s *Store) Add(ctx context.Context, key string, delta int64) (int64, error) {
	k := s.pfx + key
	for {
		r, err := s.cli.Get(ctx, k)
		if err != nil {
			return 0, s.fail("add to", key, err)
		}
		var cur, rev int64
		if len(r.Kvs) > 0 {
			if cur, err = strconv.ParseInt(string(r.Kvs[0].Value), 10, 64); err != nil {
				return 0, fmt.Errorf("etcd: add to %q: it holds %q, not a decimal integer", key, r.Kvs[0].Value)
			}
			rev = r.Kvs[0].ModRevision
		}
		if delta == 0 {
			return cur, nil
		}
		t, err := s.cli.Txn(ctx, gateway.TxnRequest{Compare: []gateway.Compare{gateway.ModRevisionIs(k, rev)},
			Success: []gateway.RequestOp{s.put(k, strconv.FormatInt(cur+delta, 10))}})
		if err != nil {
			return 0, s.fail("add to", key, err)
		}
		if t.Succeeded {
			return cur + delta, nil
		}
	}
}

// CompareAndSet sets key to desired if it holds expected (absent: nil).
func (s *Store) CompareAndSet(ctx context.Context, key string, expected, desired []byte) ([]byte, bool, error) {
	k := s.pfx + key
	if expected == nil {
		// A key that is there already fails the swap: a read says so without
		// the write through etcd's log a transaction is, even one that fails
		// (the agreed flags: every agent but the first).
		r, err := s.cli.Get(ctx, k)
		if err != nil {
			return nil, false, s.fail("compare-and-set", key, err)
		}
		if len(r.Kvs) > 0 {
			return nonNil(r.Kvs[0].Value), false, nil
		}
	}
	cmp := gateway.VersionIs(k, 0)
	if expected != nil {
		cmp = gateway.ValueIs(k, expected)
	}
	var t *gateway.TxnResponse
	ambiguous, err := retrying(ctx, func() (err error) {
		t, err = s.cli.Txn(ctx, putElseGet(cmp, s.put(k, string(desired))))
		return err
	})
	if err != nil {
		return nil, false, s.fail("compare-and-set", key, err)
	}
	kvs := t.Kvs(0)
	// After an attempt that may have happened, finding desired there is
	// taken for that attempt's swap.
	if t.Succeeded || ambiguous && len(kvs) > 0 && bytes.Equal(kvs[0].Value, desired) {
		return bytes.Clone(nonNil(desired)), true, nil
	}
	if len(kvs) > 0 {
		return nonNil(kvs[0].Value), false, nil
	}
	return nil, false, nil
}

// Delete removes key and reports whether it existed.
func (s *Store) Delete(ctx context.Context, key string) (bool, error) {
	r, err := s.cli.Delete(ctx, s.pfx+key)
	if err != nil {
		return false, s.fail("delete", key, err)
	}
	return r.Deleted > 0, nil
}

// Count returns the number of the run's keys (its lease and member keys
// not counted).
func (s *Store) Count(ctx context.Context) (int64, error) {
	r, err := s.cli.Range(ctx, keysUnder(s.pfx))
	if err != nil {
		return 0, s.fail("count", "", err)
	}
	var n int64
	for _, kv := range r.Kvs {
		if k := strings.TrimPrefix(string(kv.Key), s.pfx); k != leaseKey && !strings.HasPrefix(k, memberDir) {
			n++
		}
	}
	return n, nil
}

// put is an operation that writes value at key, bound to the run lease.
func (s *Store) put(key, value string) gateway.RequestOp { return putLeased(key, value, s.run) }

// putElseGet is a transaction that does put if cmp holds, otherwise reads
// cmp's key (the answer's Kvs(0)).
func putElseGet(cmp gateway.Compare, put gateway.RequestOp) gateway.TxnRequest {
	return gateway.TxnRequest{Compare: []gateway.Compare{cmp}, Success: []gateway.RequestOp{put},
		Failure: []gateway.RequestOp{{Range: &gateway.RangeRequest{Key: cmp.Key}}}}
}

// keysUnder reads the names of every key under dir.
func keysUnder(dir string) gateway.RangeRequest {
	r := gateway.Prefix(dir)
	r.KeysOnly = true
	return r
}

// watchUnder watches every key under dir from revision rev on.
func watchUnder(dir string, rev int64) gateway.WatchRequest {
	return gateway.WatchRequest{Key: []byte(dir), RangeEnd: gateway.PrefixEnd(dir), StartRevision: rev}
}

// fail names the call, the key and the endpoint in err.
func (s *Store) fail(op, key string, err error) error {
	return fmt.Errorf("etcd %s: %s %q: %w", strings.Join(s.o.Endpoints, ","), op, key, err)
}

// ctxErr is why a watch ended without its answer: ctx's end, or (ctx still
// running) the client closing.
func ctxErr(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return store.ErrClosed
}

// nonNil makes a stored empty value a non-nil empty slice, as the TCP store
// returns it.
func nonNil(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}

// commonPrefix is the longest prefix of every key.
func commonPrefix(keys []string) string {
	p := keys[0]
	for _, k := range keys[1:] {
		for !strings.HasPrefix(k, p) {
			p = p[:len(p)-1]
		}
	}
	return p
}

// Missing returns which of keys are absent now, with one read of their
// common prefix (never blocking: for a timeout's message).
func (s *Store) Missing(ctx context.Context, keys ...string) ([]string, error) {
	if len(keys) == 0 {
		return nil, nil
	}
	r, err := s.cli.Range(ctx, keysUnder(s.pfx+commonPrefix(keys)))
	if err != nil {
		return nil, s.fail("read", commonPrefix(keys), err)
	}
	have := map[string]bool{}
	for _, kv := range r.Kvs {
		have[strings.TrimPrefix(string(kv.Key), s.pfx)] = true
	}
	var out []string
	for _, k := range keys {
		if !have[k] {
			out = append(out, k)
		}
	}
	return out, nil
}
