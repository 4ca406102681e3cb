package etcdstore

import (
	"context"
	"fmt"
	"strings"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// Values reports to f every key under dir (relative to the run's prefix)
// with its value, first as they are now, then each write as etcd has it,
// until ctx ends: a watch where the built-in store would be polled.
func (s *Store) Values(ctx context.Context, dir string, f func(key string, value []byte)) error {
	r, err := s.cli.Get(ctx, s.pfx+dir, clientv3.WithPrefix())
	if err != nil {
		return s.fail("read", dir, err)
	}
	for _, kv := range r.Kvs {
		f(strings.TrimPrefix(string(kv.Key), s.pfx), kv.Value)
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	for wr := range s.cli.Watch(wctx, s.pfx+dir, clientv3.WithPrefix(), clientv3.WithRev(r.Header.Revision+1)) {
		if err := wr.Err(); err != nil {
			return fmt.Errorf("etcd: watch %q: %w", dir, err)
		}
		for _, ev := range wr.Events {
			if ev.Type == mvccpb.PUT {
				f(strings.TrimPrefix(string(ev.Kv.Key), s.pfx), ev.Kv.Value)
			}
		}
	}
	return ctx.Err()
}
